// The MR7 x NR32 `vdpbf16ps` tile shared by the FP8 and MXFP4 panel GEMMs (fp8_gemm_avx512.cc,
// mxfp4_panel_gemm_avx512.cc), and the store of its totals. Include only from *_avx512.cc files.
//
// Operands: a  = one 7-row activation tile, [K/2][7] bf16-pair dwords (PackActTile);
//           bp = one decoded 32-column weight half-panel, [K/2][32] bf16-pair dwords;
//           scales(b, s0, s1) gives the fp32 factors of K block b for columns 0-15 / 16-31.
// Per output element the order is the block-scaled one of fp8_gemm.h / mxfp4_gemm.h: the block's
// 16 k-pairs accumulated by `vdpbf16ps` from +0, then tot = fma(blocksum, scale, tot), blocks
// ascending. 14 block accumulators + 14 totals + 2 B registers + 1 broadcast fill the 32 zmm
// registers, so the fold is a register FMA (no scratch tile per block).
//
// The A tile (71 KB at K = 5120) does not fit L1 and the whole packed A (~7.7 MB at 768 rows) is
// re-read from L3 for every half-panel, so each block prefetches the A lines kAPrefetchBytes
// ahead (past a tile's end that is the next tile's start). Measured on Zen 5 at K = 5120, 110
// tiles, one thread: 57-62% of the `vdpbf16ps` peak without, 78-84% with 6 blocks ahead (3-4.5 KB
// were equally good, 1 block ahead half as useful); with A in L2 the tile runs at ~90%.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/store_out_avx512.h"

namespace deepinfer::kernels::avx512 {

inline constexpr int kPanelMr = 7;
inline constexpr int kPanelNr = 32;
// A bytes per K block (16 pairs x 7 rows x 4 B = 7 cache lines) and the prefetch distance.
inline constexpr int kPanelABlockBytes = 16 * kPanelMr * 4;
inline constexpr int kAPrefetchBytes = 6 * kPanelABlockBytes;

// Row blocking of the panel GEMMs: every 32-column unit runs over all A tiles of a row block
// before any unit starts the next block, so the packed A that the units re-read is one block
// (kPanelRowBlockBytes, L3-resident with room for the B panels) instead of all of A. At 2,048
// rows the packed A is 21 MB (K = 5120) to 34 MB (K = 8192), streamed from DRAM once per unit
// without blocking. Blocking changes only the order in which tiles are computed, never a result.
inline constexpr int64_t kPanelRowBlockBytes = int64_t{6} << 20;

// A tiles per row block for K/2 = pairs (at least one).
inline int64_t PanelRowBlockTiles(int64_t pairs) {
  const int64_t tile_bytes = pairs * kPanelMr * 4;
  return tile_bytes >= kPanelRowBlockBytes ? 1 : kPanelRowBlockBytes / tile_bytes;
}

// scratch[7][32] = the tile's fp32 totals over n_blocks K blocks.
template <typename BlockScales>
inline void PanelTile(const uint32_t* a, const uint32_t* bp, int64_t n_blocks,
                      const BlockScales& scales, float* scratch) {
  constexpr int kMr = kPanelMr;
  constexpr int kNr = kPanelNr;
  __m512 tot[kMr][2];
#pragma GCC unroll 14
  for (int r = 0; r < kMr; ++r) tot[r][0] = tot[r][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m512 acc[kMr][2];
#pragma GCC unroll 14
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const uint32_t* ab = a + b * 16 * kMr;
    const uint32_t* bb = bp + b * 16 * kNr;
    const char* pf = reinterpret_cast<const char*>(ab) + kAPrefetchBytes;
#pragma GCC unroll 7
    for (int l = 0; l < kPanelABlockBytes / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      const __m512bh b0 = (__m512bh)_mm512_load_si512(bb + j * kNr);
      const __m512bh b1 = (__m512bh)_mm512_load_si512(bb + j * kNr + 16);
#pragma GCC unroll 14
      for (int r = 0; r < kMr; ++r) {
        const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(ab[j * kMr + r]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], b0, x);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], b1, x);
      }
    }
    __m512 s0, s1;
    scales(b, s0, s1);
#pragma GCC unroll 14
    for (int r = 0; r < kMr; ++r) {
      tot[r][0] = _mm512_fmadd_ps(acc[r][0], s0, tot[r][0]);
      tot[r][1] = _mm512_fmadd_ps(acc[r][1], s1, tot[r][1]);
    }
  }
#pragma GCC unroll 14
  for (int r = 0; r < kMr; ++r) {
    _mm512_store_ps(scratch + r * kNr, tot[r][0]);
    _mm512_store_ps(scratch + r * kNr + 16, tot[r][1]);
  }
}

// Stores rows [0, rows) x columns [0, n_valid) of a scratch tile to out rows row0.. (ldo elements
// apart), starting at column col0, as out_dtype (kF32 or kBF16, RNE).
inline void StorePanelTile(const float* scratch, int64_t rows, int64_t n_valid, void* out,
                           int64_t ldo, int64_t row0, int64_t col0, DType out_dtype) {
  const __mmask16 m0 = TailMask(n_valid), m1 = TailMask(n_valid - 16);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = (row0 + r) * ldo + col0;
    StoreOut(_mm512_load_ps(scratch + r * kPanelNr), m0, out, at, out_dtype);
    if (m1 != 0) StoreOut(_mm512_load_ps(scratch + r * kPanelNr + 16), m1, out, at + 16, out_dtype);
  }
}

}  // namespace deepinfer::kernels::avx512
