// AVX2 GEMV / GEMV-M of the MXFP4 kernels (decode and small expert batches, n_rows below
// kMxfp4Avx2PanelGemmMinRows; the panel GEMM of mxfp4_panel_gemm_avx2.cc takes more rows).
//
// The activation rows are widened once per call to fp32 in the order the numerics contract
// consumes them (k-pair p as x[2p+1], x[2p]). Each 8-row slice of a packed panel is decoded once
// per chunk of up to 8 activation rows (DecodeHalfChunkF32: exact e2m1 values as fp32) and
// FMA'd into one blocksum accumulator per (slice, activation row); a chunk of R rows takes 8/R
// slices at a time (at least 8 independent FMA chains for R <= 2, so the FMA latency is hidden
// even at M = 1). The totals sit in a small L1 scratch: tot = fma(blocksum, scale, tot) per block.
// For quantizer activations every product is exact and normal, so this plain FMA chain (odd
// element first, pairs ascending, from +0) equals the vdpbf16ps order of the reference bit for bit.
// Where StreamPrefetchStyle() says kSpread (Intel), the first slice pass over a panel prefetches
// every line of each block kMxfp4L2PrefetchBytes ahead into L2 and kMxfp4PrefetchBytes ahead into
// L1 (the later passes find the panel in L2): on the Intel host at the AVX2 level the six-expert
// GEMV went from 10.3-10.6 to 14.1-15.1 GB/s (37% -> 51-52% of the paired read, performance.md,
// session 33). Elsewhere (AMD) the hardware prefetcher streams alone, as the FP8 GEMV measured on
// Zen 1 (fp8_gemv_avx2.cc).
#include <immintrin.h>

#include <algorithm>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/mxfp4_decode_avx2.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels {

namespace {

constexpr int kSliceRows = 8;  // output rows per decoded register
constexpr int kSlices = kMxfp4PanelRows / kSliceRows;

// x rows [0, m) -> xw[m][k] fp32 in contract order.
void WidenRows(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, float* xw) {
  for (int64_t r = 0; r < m; ++r) {
    const uint16_t* x = xq + r * ldx;
    float* d = xw + r * k;
    for (int64_t kk = 0; kk < k; kk += 2) {
      d[kk] = Bf16ToFloat(x[kk + 1]);
      d[kk + 1] = Bf16ToFloat(x[kk]);
    }
  }
}

// tot[s][r][8] = totals of slices [s0, s0 + S) of one panel (8 output rows each) against the R
// activation rows xw[r] (k floats apart). The totals live in L1 (S·R blocksums, the decoded
// weights and a broadcast already fill the 16 ymm registers).
template <int R, int S>
void SliceRows(const uint8_t* panel, int64_t n_blocks, int s0, const float* xw, int64_t k,
               const avx2::Mxfp4Lut& lut, bool prefetch, float* tot) {
  for (int i = 0; i < S * R; ++i) _mm256_store_ps(tot + 8 * i, _mm256_setzero_ps());
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
    const float* xb = xw + b * kMxfp4Block;
    if (prefetch) {
      for (int64_t i = 0; i < kMxfp4PanelBlockBytes; i += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(blk + kMxfp4L2PrefetchBytes + i), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(blk + kMxfp4PrefetchBytes + i), _MM_HINT_T0);
      }
    }
    __m256 acc[S][R];
    for (int s = 0; s < S; ++s) {
      for (int r = 0; r < R; ++r) acc[s][r] = _mm256_setzero_ps();
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      if constexpr (R <= 2) {
        // Two slices at a time in bf16-pair form, their FMAs interleaved: more independent
        // chains in flight (each chain is 32 dependent FMAs per block).
#pragma GCC unroll 4
        for (int s = 0; s < S; s += 2) {
          const int sa = s0 + s, sb = s0 + s + 1;
          __m256i pa[4], pb[4];
          avx2::DecodeHalfChunkPairs(blk + 64 + (t * 4 + sa / 2) * 64 + (sa % 2) * 32, lut, pa);
          avx2::DecodeHalfChunkPairs(blk + 64 + (t * 4 + sb / 2) * 64 + (sb % 2) * 32, lut, pb);
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 2
            for (int r = 0; r < R; ++r) {
              const __m256 xo = _mm256_broadcast_ss(xb + r * k + 8 * t + 2 * j);
              acc[s][r] = _mm256_fmadd_ps(avx2::OddF32(pa[j], lut), xo, acc[s][r]);
              acc[s + 1][r] = _mm256_fmadd_ps(avx2::OddF32(pb[j], lut), xo, acc[s + 1][r]);
            }
#pragma GCC unroll 2
            for (int r = 0; r < R; ++r) {
              const __m256 xe = _mm256_broadcast_ss(xb + r * k + 8 * t + 2 * j + 1);
              acc[s][r] = _mm256_fmadd_ps(avx2::EvenF32(pa[j]), xe, acc[s][r]);
              acc[s + 1][r] = _mm256_fmadd_ps(avx2::EvenF32(pb[j]), xe, acc[s + 1][r]);
            }
          }
        }
      } else {
#pragma GCC unroll 2
        for (int s = 0; s < S; ++s) {
          const int slice = s0 + s;
          __m256 w[8];
          avx2::DecodeHalfChunkF32(blk + 64 + (t * 4 + slice / 2) * 64 + (slice % 2) * 32, lut, w);
#pragma GCC unroll 8
          for (int q = 0; q < 8; ++q) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
              acc[s][r] =
                  _mm256_fmadd_ps(w[q], _mm256_broadcast_ss(xb + r * k + 8 * t + q), acc[s][r]);
            }
          }
        }
      }
    }
    for (int s = 0; s < S; ++s) {
      const __m256 scale = avx2::RowScales8(blk + kSliceRows * (s0 + s));
      for (int r = 0; r < R; ++r) {
        float* t = tot + 8 * (s * R + r);
        _mm256_store_ps(t, _mm256_fmadd_ps(acc[s][r], scale, _mm256_load_ps(t)));
      }
    }
  }
}

// Rows [m0, m0 + R) of out for one panel (`valid` of its 64 rows are real outputs).
template <int R>
void PanelRows(const Mxfp4Call& c, const uint8_t* panel, const float* xw, int64_t m0, int64_t n0,
               int64_t valid, const avx2::Mxfp4Lut& lut, bool prefetch) {
  constexpr int S = R == 1 ? 4 : R <= 3 ? 2 : 1;
  alignas(32) float tot[S * R * kSliceRows];
  for (int s0 = 0; s0 < kSlices; s0 += S) {
    if (s0 * kSliceRows >= valid) break;
    SliceRows<R, S>(panel, c.w.n_blocks(), s0, xw, c.w.k, lut, prefetch && s0 == 0, tot);
    for (int s = 0; s < S; ++s) {
      const int64_t col = n0 + (s0 + s) * kSliceRows;
      const int64_t cols = std::min<int64_t>(kSliceRows, n0 + valid - col);
      if (cols <= 0) break;
      for (int r = 0; r < R; ++r) {
        const float* src = tot + kSliceRows * (s * R + r);
        if (c.out_dtype == DType::kF32) {
          float* o = static_cast<float*>(c.out) + (m0 + r) * c.ldo + col;
          for (int64_t i = 0; i < cols; ++i) o[i] = src[i];
        } else {
          uint16_t* o = static_cast<uint16_t*>(c.out) + (m0 + r) * c.ldo + col;
          for (int64_t i = 0; i < cols; ++i) o[i] = FloatToBf16(src[i]);
        }
      }
    }
  }
}

void PanelChunk(int rows, const Mxfp4Call& c, const uint8_t* panel, const float* xw, int64_t m0,
                int64_t n0, int64_t valid, const avx2::Mxfp4Lut& lut, bool prefetch) {
  switch (rows) {
    case 1:
      return PanelRows<1>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 2:
      return PanelRows<2>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 3:
      return PanelRows<3>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 4:
      return PanelRows<4>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 5:
      return PanelRows<5>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 6:
      return PanelRows<6>(c, panel, xw, m0, n0, valid, lut, prefetch);
    case 7:
      return PanelRows<7>(c, panel, xw, m0, n0, valid, lut, prefetch);
    default:
      return PanelRows<8>(c, panel, xw, m0, n0, valid, lut, prefetch);
  }
}

}  // namespace

void Mxfp4PanelsAvx2(const Mxfp4Call& c, int64_t p_begin, int64_t p_end) {
  // Widened rows per call: thread_local so that steady-state calls do not allocate.
  thread_local AlignedBuffer<float> xw;
  xw.EnsureSize(static_cast<size_t>(c.n_rows * c.w.k));
  WidenRows(c.xq, c.n_rows, c.ldx, c.w.k, xw.data());
  const avx2::Mxfp4Lut lut = avx2::MakeMxfp4Lut();
  // Only the first row chunk of a panel streams it from memory.
  const bool prefetch = StreamPrefetchStyle() == StreamPrefetch::kSpread;
  // Row chunks of at most 8, balanced (9 rows: 5 + 4, not 8 + 1).
  const int64_t n_chunks = (c.n_rows + 7) / 8;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t n0 = p * kMxfp4PanelRows;
    const int64_t valid = std::min<int64_t>(kMxfp4PanelRows, c.w.n - n0);
    for (int64_t ch = 0; ch < n_chunks; ++ch) {
      const int64_t m0 = ch * c.n_rows / n_chunks, m1 = (ch + 1) * c.n_rows / n_chunks;
      PanelChunk(static_cast<int>(m1 - m0), c, c.w.panel(p), xw.data() + m0 * c.w.k, m0, n0, valid,
                 lut, prefetch && ch == 0);
    }
  }
}

}  // namespace deepinfer::kernels
