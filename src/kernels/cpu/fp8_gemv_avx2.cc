// AVX2 + FMA FP8 GEMV (m = 1): the weight projections of a batch-1 decode step.
//
// Per panel (64 rows) and K block: each 32-byte chunk half (8 rows x 4 k) is decoded in registers
// (fp8_decode_avx2.h) and multiplied straight into that 8-row vector's accumulator, k in the
// order 1, 0, 3, 2 (pairs ascending, odd element first, fp8_gemm.h); the 8 accumulators are
// independent chains. Products are exact, so each FMA rounds like the `vdpbf16ps` step. After the
// block, tot = fma(blocksum, tile scale, tot). Nothing is written to memory but the totals.
// The decode, not DRAM, bounds it on Zen 1 (~4.4 GB/s per core); software prefetch only cost
// issue slots there (one thread: 3.65 GB/s with a prefetch of every line 4 KiB ahead, 4.3
// without). So the prefetch follows StreamPrefetchStyle() (core/cpu_features.h): none where it
// says kBurst (AMD: the hardware prefetcher streams alone), and where it says kSpread (Intel)
// each line kGemvPrefetchBytes ahead into L1 and kGemvL2PrefetchBytes ahead into L2 as the
// AVX-512 GEMV does: on the Intel host at the AVX2 level 47-48% -> 86% of the paired read, one
// thread or two (docs/performance.md, session 33).
#include <immintrin.h>

#include <algorithm>

#include "core/cpu_features.h"
#include "kernels/cpu/fp8_decode_avx2.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

namespace {

// One K block of one panel: acc[q] (rows 8q..8q+7) = the block's sums. x: the block's 32 values.
template <bool kPrefetch>
inline void GemvBlock(const E4m3LutAvx2& lut, const uint8_t* blk, const float* x, __m256 acc[8]) {
  for (int q = 0; q < 8; ++q) acc[q] = _mm256_setzero_ps();
#pragma GCC unroll 2
  for (int s = 0; s < 8; ++s) {
    const __m256 x0 = _mm256_broadcast_ss(x + 4 * s), x1 = _mm256_broadcast_ss(x + 4 * s + 1);
    const __m256 x2 = _mm256_broadcast_ss(x + 4 * s + 2), x3 = _mm256_broadcast_ss(x + 4 * s + 3);
    const uint8_t* row = blk + s * 4 * kFp8ChunkBytes;  // 4 chunks = 8 halves, q = 2·group + half
    if constexpr (kPrefetch) {
      for (int c = 0; c < 4; ++c) {
        const char* line = reinterpret_cast<const char*>(row + c * kFp8ChunkBytes);
        _mm_prefetch(line + kGemvPrefetchBytes, _MM_HINT_T0);
        _mm_prefetch(line + kGemvL2PrefetchBytes, _MM_HINT_T1);
      }
    }
    // Two halves at a time, their FMAs interleaved: consecutive FMAs then feed different chains
    // (measured +20% over one half at a time on Zen 1, whose FP scheduler fills with the
    // dependent FMAs of a single chain).
#pragma GCC unroll 4
    for (int q = 0; q < 8; q += 2) {
      __m256i a01, a23, b01, b23;
      DecodeHalfChunk(lut, _mm256_load_si256(reinterpret_cast<const __m256i*>(row + 32 * q)), a01,
                      a23);
      DecodeHalfChunk(lut, _mm256_load_si256(reinterpret_cast<const __m256i*>(row + 32 * q + 32)),
                      b01, b23);
      acc[q] = _mm256_fmadd_ps(x1, OddF32(a01), acc[q]);
      acc[q + 1] = _mm256_fmadd_ps(x1, OddF32(b01), acc[q + 1]);
      acc[q] = _mm256_fmadd_ps(x0, EvenF32(a01), acc[q]);
      acc[q + 1] = _mm256_fmadd_ps(x0, EvenF32(b01), acc[q + 1]);
      acc[q] = _mm256_fmadd_ps(x3, OddF32(a23), acc[q]);
      acc[q + 1] = _mm256_fmadd_ps(x3, OddF32(b23), acc[q + 1]);
      acc[q] = _mm256_fmadd_ps(x2, EvenF32(a23), acc[q]);
      acc[q + 1] = _mm256_fmadd_ps(x2, EvenF32(b23), acc[q + 1]);
    }
  }
}

template <bool kPrefetch>
void Gemv1Panels(const float* x, const PackedFp8Matrix& w, int64_t p0, int64_t p1,
                 const OutView& out) {
  const E4m3LutAvx2 lut = LoadE4m3LutAvx2();
  const int64_t kb = w.k_blocks();
  alignas(32) float tot[kFp8PanelRows];
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* codes = w.PanelCodes(p);
    const float* sc = w.PanelScales(p);
    for (int q = 0; q < 8; ++q) _mm256_store_ps(tot + 8 * q, _mm256_setzero_ps());
    for (int64_t b = 0; b < kb; ++b) {
      const uint8_t* blk = codes + b * kFp8BlockBytes;
      __m256 acc[8];
      GemvBlock<kPrefetch>(lut, blk, x + b * kFp8BlockK, acc);
      const __m256 s0 = _mm256_broadcast_ss(sc + 2 * b), s1 = _mm256_broadcast_ss(sc + 2 * b + 1);
      for (int q = 0; q < 8; ++q) {
        _mm256_store_ps(tot + 8 * q,
                        _mm256_fmadd_ps(acc[q], q < 4 ? s0 : s1, _mm256_load_ps(tot + 8 * q)));
      }
    }
    const int64_t n_valid = std::min<int64_t>(kFp8PanelRows, w.n - p * kFp8PanelRows);
    StoreRowScalar(out, 0, p * kFp8PanelRows, tot, n_valid);
  }
}

}  // namespace

void Fp8Gemv1PanelsAvx2(const float* x, const PackedFp8Matrix& w, int64_t p0, int64_t p1,
                        const OutView& out) {
  if (StreamPrefetchStyle() == StreamPrefetch::kSpread) {
    Gemv1Panels<true>(x, w, p0, p1, out);
  } else {
    Gemv1Panels<false>(x, w, p0, p1, out);
  }
}

}  // namespace deepinfer::kernels::fp8_internal
