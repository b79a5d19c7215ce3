// FP8 GEMV (m = 1) and GEMV-M (m <= 8 per pass) over the repacked panel layout, AVX-512 BF16.
//
// Per panel (64 rows) and K block: each 64-byte chunk is decoded once (fp8_decode_avx512.h: the
// affine decode, or the LUT for the chunks PackedFp8Matrix::special_chunks flags) and multiplied
// into M rows' accumulators with `vdpbf16ps` against broadcast activation pairs. The per-block sums
// are folded into fp32 totals with one FMA by the 32-row tile scale (fp8_gemm.h). Independent
// accumulator chains (vdpbf16ps: latency 6, 2 per cycle) come from rows (M), 16-row groups (G) and,
// for m = 1, two K blocks in flight (NB); the order per output never changes. Each thread streams
// its contiguous panels front to back; a software prefetch of every line, kPrefetchBytes ahead,
// keeps the DRAM stream full: in one burst per block pair, or one line per chunk consumed (plus one
// into L2 further ahead), as StreamPrefetchStyle() says for this CPU (core/cpu_features.h).
#include <immintrin.h>

#include <algorithm>

#include "core/cpu_features.h"
#include "kernels/cpu/fp8_decode_avx512.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

namespace {

// kGemvPrefetchBytes, kGemvL2PrefetchBytes (fp8_gemm_internal.h): the spread form's L2 prefetch
// took the Intel host from 70-77% of the paired read (L1 prefetches alone) to 87-95%.
constexpr int64_t kPrefetchBytes = kGemvPrefetchBytes;
constexpr int64_t kL2PrefetchBytes = kGemvL2PrefetchBytes;
constexpr int kRowsPerPass = 8;

struct Decoders {
  E4m3Lut lut;
  E4m3Affine affine;
};

// Blocks [b, b + NB) of one panel for groups processed G at a time.
// blk: codes of block b; sc: scales of block b ([NB][2]); sp: special-chunk masks of block b
// ([NB]); xp: pairs of block b, [16·NB][M]; tot: [M][64] fp32 totals, updated in block order.
template <int M, int G, int NB>
inline void GemvBlocks(const Decoders& dec, const uint8_t* blk, const float* sc, const uint32_t* sp,
                       const uint32_t* xp, float* tot, bool burst) {
  // kBurst: all lines of the NB blocks, kPrefetchBytes ahead, before their compute (Zen 5: 72% ->
  // 96% of the paired read at M = 1 against the spread form, which interleaves two streams 2 KiB
  // apart when NB = 2). kSpread: as each chunk is loaded, its line kPrefetchBytes ahead into L1
  // and its line kL2PrefetchBytes ahead into L2.
  if (burst) {
    for (int64_t i = 0; i < NB * kFp8BlockBytes; i += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBytes + i), _MM_HINT_T0);
    }
  }
  for (int h0 = 0; h0 < 4; h0 += G) {
    __m512 acc[NB][M][G];
    for (int nb = 0; nb < NB; ++nb)
      for (int i = 0; i < M; ++i)
        for (int gi = 0; gi < G; ++gi) acc[nb][i][gi] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      for (int nb = 0; nb < NB; ++nb) {
        const uint32_t* xs = xp + (nb * 16 + 2 * s) * M;
        for (int gi = 0; gi < G; ++gi) {
          const uint8_t* ptr = blk + nb * kFp8BlockBytes + (s * 4 + h0 + gi) * kFp8ChunkBytes;
          if (!burst) {
            _mm_prefetch(reinterpret_cast<const char*>(ptr + kPrefetchBytes), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(ptr + kL2PrefetchBytes), _MM_HINT_T1);
          }
          __m512i r0, r1;
          const __m512i codes = _mm512_load_si512(ptr);
          if (__builtin_expect((sp[nb] >> (s * 4 + h0 + gi)) & 1u, 0)) {
            DecodeChunk(dec.lut, codes, r0, r1);
          } else {
            DecodeChunkAffine(dec.affine, codes, r0, r1);
          }
          for (int i = 0; i < M; ++i) {
            acc[nb][i][gi] = Dp(acc[nb][i][gi], r0, _mm512_set1_epi32(static_cast<int>(xs[i])));
            acc[nb][i][gi] = Dp(acc[nb][i][gi], r1, _mm512_set1_epi32(static_cast<int>(xs[M + i])));
          }
        }
      }
    }
    for (int nb = 0; nb < NB; ++nb) {
      for (int gi = 0; gi < G; ++gi) {
        const __m512 sw = _mm512_set1_ps(sc[nb * 2 + (h0 + gi) / 2]);
        for (int i = 0; i < M; ++i) {
          float* t = tot + i * kFp8PanelRows + (h0 + gi) * 16;
          _mm512_store_ps(t, _mm512_fmadd_ps(acc[nb][i][gi], sw, _mm512_load_ps(t)));
        }
      }
    }
  }
}

// One panel over all K blocks for M rows. xp: [K/2][M] pairs. tot: [M][64].
template <int M, int G, int NB>
void GemvPanel(const uint8_t* codes, const float* sc, const uint32_t* sp, int64_t kb,
               const uint32_t* xp, float* tot, bool burst) {
  const Decoders dec{LoadE4m3Lut(), LoadE4m3Affine()};
  for (int i = 0; i < M * kFp8PanelRows; i += 16) _mm512_store_ps(tot + i, _mm512_setzero_ps());
  int64_t b = 0;
  for (; b + NB <= kb; b += NB) {
    GemvBlocks<M, G, NB>(dec, codes + b * kFp8BlockBytes, sc + b * 2, sp + b, xp + b * 16 * M, tot,
                         burst);
  }
  for (; b < kb; ++b) {
    GemvBlocks<M, G, 1>(dec, codes + b * kFp8BlockBytes, sc + b * 2, sp + b, xp + b * 16 * M, tot,
                        burst);
  }
}

using GemvPanelFn = void (*)(const uint8_t*, const float*, const uint32_t*, int64_t,
                             const uint32_t*, float*, bool);

// Accumulator chains per configuration: NB·M·G (8 to 16).
constexpr GemvPanelFn kGemvPanel[kRowsPerPass + 1] = {
    nullptr,
    GemvPanel<1, 4, 2>,
    GemvPanel<2, 4, 1>,
    GemvPanel<3, 4, 1>,
    GemvPanel<4, 4, 1>,
    GemvPanel<5, 2, 1>,
    GemvPanel<6, 2, 1>,
    GemvPanel<7, 2, 1>,
    GemvPanel<8, 2, 1>,
};

}  // namespace

void Fp8GemvPanelsAvx512(const uint32_t* xp, int64_t m, const PackedFp8Matrix& w, int64_t p0,
                         int64_t p1, const OutView& out) {
  const int64_t kb = w.k_blocks();
  const int64_t pairs = w.k / 2;
  alignas(64) float tot[kRowsPerPass * kFp8PanelRows];
  const bool burst = StreamPrefetchStyle() == StreamPrefetch::kBurst;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n_valid = std::min<int64_t>(kFp8PanelRows, w.n - p * kFp8PanelRows);
    // Row chunks innermost: the panel (64·K bytes) stays in L2 for the chunks after the first.
    for (int64_t r0 = 0; r0 < m; r0 += kRowsPerPass) {
      const int64_t mc = std::min<int64_t>(kRowsPerPass, m - r0);
      kGemvPanel[mc](w.PanelCodes(p), w.PanelScales(p), w.PanelSpecialChunks(p), kb,
                     xp + r0 * pairs, tot, burst);
      for (int64_t i = 0; i < mc; ++i) {
        for (int g = 0; g < 4; ++g) {
          const int64_t count = n_valid - g * 16;
          if (count <= 0) break;
          StoreRow16(out, r0 + i, p * kFp8PanelRows + g * 16,
                     _mm512_load_ps(tot + i * kFp8PanelRows + g * 16),
                     std::min<int64_t>(count, 16));
        }
      }
    }
  }
}

}  // namespace deepinfer::kernels::fp8_internal
