// AVX-512 MXFP4 kernels (cpu_kernels.md §4, §5 small M): vpermw word-table decode to bf16 pairs
// (mxfp4_decode_avx512.h), vdpbf16ps, per-block fma epilogue with the row scales, 4 KB software
// prefetch (measured on Zen 5: 8 KB ahead reached ~76% of the paired read on w1|w3, 4 KB ~86%). The
// GEMV prefetches a block's lines in one burst, or as each chunk is loaded its line into L1 and the
// line 32 KiB ahead into L2, as StreamPrefetchStyle() says for this CPU (core/cpu_features.h; on
// the Intel host, with the vpermw decode, the spread form reads 78-80% of the paired read against
// 70-71% for the burst).
//
// GEMV (one activation row) keeps the 4 row groups of a panel in flight; GEMV-M (up to 8 rows)
// decodes each weight register once and feeds it to every row. Both follow the order of
// mxfp4_gemm.h exactly, so they agree with each other and with the reference bit for bit.
#include <immintrin.h>

#include <algorithm>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/mxfp4_decode_avx512.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "kernels/cpu/store_out_avx512.h"

namespace deepinfer::kernels {

namespace {

constexpr int64_t kPrefetchBytes = kMxfp4PrefetchBytes;
constexpr int64_t kL2PrefetchBytes = kMxfp4L2PrefetchBytes;  // the spread form's, into L2

inline void PrefetchBlock(const uint8_t* blk) {
  for (int64_t i = 0; i < kMxfp4PanelBlockBytes; i += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBytes + i), _MM_HINT_T0);
  }
}

// One activation row against one panel: tot[0..63] = the 64 row totals.
void GemvPanel(const uint8_t* panel, int64_t n_blocks, const uint16_t* x, __m512i table, float* tot,
               bool burst) {
  const auto* xp = reinterpret_cast<const uint32_t*>(x);  // k-pair dwords
  __m512 t0 = _mm512_setzero_ps(), t1 = t0, t2 = t0, t3 = t0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
    if (burst) {
      PrefetchBlock(blk);
    } else {
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBytes), _MM_HINT_T0);  // scales
      _mm_prefetch(reinterpret_cast<const char*>(blk + kL2PrefetchBytes), _MM_HINT_T1);
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int t = 0; t < 4; ++t) {
      const uint32_t* xb = xp + b * 16 + 4 * t;
      __m512bh xv[4];
      for (int j = 0; j < 4; ++j) xv[j] = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[j]));
      const uint8_t* chunks = blk + 64 + t * 256;
      for (int q = 0; !burst && q < 4; ++q) {
        _mm_prefetch(reinterpret_cast<const char*>(chunks + kPrefetchBytes + 64 * q), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(chunks + kL2PrefetchBytes + 64 * q),
                     _MM_HINT_T1);
      }
      __m512i r[4];
      avx512::DecodeMxfp4Chunk(chunks, table, r);
      for (int j = 0; j < 4; ++j) a0 = _mm512_dpbf16_ps(a0, (__m512bh)r[j], xv[j]);
      avx512::DecodeMxfp4Chunk(chunks + 64, table, r);
      for (int j = 0; j < 4; ++j) a1 = _mm512_dpbf16_ps(a1, (__m512bh)r[j], xv[j]);
      avx512::DecodeMxfp4Chunk(chunks + 128, table, r);
      for (int j = 0; j < 4; ++j) a2 = _mm512_dpbf16_ps(a2, (__m512bh)r[j], xv[j]);
      avx512::DecodeMxfp4Chunk(chunks + 192, table, r);
      for (int j = 0; j < 4; ++j) a3 = _mm512_dpbf16_ps(a3, (__m512bh)r[j], xv[j]);
    }
    t0 = _mm512_fmadd_ps(a0, avx512::Mxfp4RowScales(blk), t0);
    t1 = _mm512_fmadd_ps(a1, avx512::Mxfp4RowScales(blk + 16), t1);
    t2 = _mm512_fmadd_ps(a2, avx512::Mxfp4RowScales(blk + 32), t2);
    t3 = _mm512_fmadd_ps(a3, avx512::Mxfp4RowScales(blk + 48), t3);
  }
  _mm512_store_ps(tot, t0);
  _mm512_store_ps(tot + 16, t1);
  _mm512_store_ps(tot + 32, t2);
  _mm512_store_ps(tot + 48, t3);
}

// M (<= 8) activation rows against one panel; xp = [k-pair][M] dwords; tot = [M][64].
template <int M>
void GemvMPanel(const uint8_t* panel, int64_t n_blocks, const uint32_t* xp, __m512i table,
                float* tot) {
  for (int i = 0; i < M * 64; i += 16) _mm512_store_ps(tot + i, _mm512_setzero_ps());
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
    PrefetchBlock(blk);
    const uint32_t* xb = xp + b * 16 * M;
    for (int g = 0; g < 4; ++g) {
      __m512 acc[M];
      for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
      for (int t = 0; t < 4; ++t) {
        __m512i r[4];
        avx512::DecodeMxfp4Chunk(blk + 64 + (t * 4 + g) * 64, table, r);
        for (int j = 0; j < 4; ++j) {
          for (int m = 0; m < M; ++m) {
            const __m512bh xv =
                (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[(4 * t + j) * M + m]));
            acc[m] = _mm512_dpbf16_ps(acc[m], (__m512bh)r[j], xv);
          }
        }
      }
      const __m512 sw = avx512::Mxfp4RowScales(blk + 16 * g);
      for (int m = 0; m < M; ++m) {
        float* tp = tot + m * 64 + 16 * g;
        _mm512_store_ps(tp, _mm512_fmadd_ps(acc[m], sw, _mm512_load_ps(tp)));
      }
    }
  }
}

void StoreRows(const float* tot, int64_t rows, int64_t valid, int64_t n0, const Mxfp4Call& c,
               int64_t m0) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int g = 0; g < 4; ++g) {
      const __mmask16 mask = avx512::TailMask(valid - 16 * g);
      if (mask == 0) break;
      avx512::StoreOut(_mm512_load_ps(tot + m * 64 + 16 * g), mask, c.out,
                       (m0 + m) * c.ldo + n0 + 16 * g, c.out_dtype);
    }
  }
}

}  // namespace

void Mxfp4PanelsAvx512(const Mxfp4Call& c, int64_t p_begin, int64_t p_end) {
  const __m512i table = avx512::MakeMxfp4WordTable();
  const int64_t n_blocks = c.w.n_blocks();
  alignas(64) float tot[kMxfp4ChunkRows * 64];
  const bool burst = StreamPrefetchStyle() == StreamPrefetch::kBurst;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const uint8_t* panel = c.w.panel(p);
    const int64_t n0 = p * kMxfp4PanelRows;
    const int64_t valid = c.w.n - n0;
    if (c.n_rows == 1) {
      GemvPanel(panel, n_blocks, c.xq, table, tot, burst);
      StoreRows(tot, 1, valid, n0, c, 0);
      continue;
    }
    for (int64_t m0 = 0; m0 < c.n_rows; m0 += kMxfp4ChunkRows) {
      const int64_t rows = std::min<int64_t>(kMxfp4ChunkRows, c.n_rows - m0);
      const uint32_t* xp = c.xpacked + m0 * (c.w.k / 2);
      switch (rows) {
        case 1:
          GemvMPanel<1>(panel, n_blocks, xp, table, tot);
          break;
        case 2:
          GemvMPanel<2>(panel, n_blocks, xp, table, tot);
          break;
        case 3:
          GemvMPanel<3>(panel, n_blocks, xp, table, tot);
          break;
        case 4:
          GemvMPanel<4>(panel, n_blocks, xp, table, tot);
          break;
        case 5:
          GemvMPanel<5>(panel, n_blocks, xp, table, tot);
          break;
        case 6:
          GemvMPanel<6>(panel, n_blocks, xp, table, tot);
          break;
        case 7:
          GemvMPanel<7>(panel, n_blocks, xp, table, tot);
          break;
        default:
          GemvMPanel<8>(panel, n_blocks, xp, table, tot);
          break;
      }
      StoreRows(tot, rows, valid, n0, c, m0);
    }
  }
}

}  // namespace deepinfer::kernels
