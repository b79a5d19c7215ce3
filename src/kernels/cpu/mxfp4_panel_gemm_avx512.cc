// AVX-512 MXFP4 panel GEMM for many activation rows (prefill experts; cpu_kernels.md §5).
//
// GEMV-M (mxfp4_gemm_avx512.cc) decodes every weight register again for each chunk of 8 rows.
// Here threads take 32-row units of W (half a packed panel) from a shared counter; per unit the
// weights are decoded once over the full K into a bf16 panel bp [K/2][32] (L2-resident: 327 KB
// at K = 5120) with its fp32 row scales sc [K/32][32]; then for each 7-row tile of A (packed
// once per call as [K/2][7] pair dwords) the MR7 x NR32 tile of panel_tile_avx512.h runs, with
// the rows' block scales as the per-column fold factors.
//
// Order per output element: exactly that of mxfp4_gemm.h (blocksum over the block's 16 k-pairs
// ascending from +0, then tot = fma(blocksum, scale, tot) over blocks ascending), so results are
// bit-identical to GEMV / GEMV-M and the reference whatever the path, tile, unit or thread.
#include <immintrin.h>

#include <algorithm>
#include <atomic>

#include "core/thread_pool.h"
#include "kernels/cpu/act_pack.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/mxfp4_decode_avx512.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "kernels/cpu/panel_tile_avx512.h"

namespace deepinfer::kernels {

namespace {

constexpr int kMr = avx512::kPanelMr;
constexpr int kNr = avx512::kPanelNr;

// Half h (rows 32h..32h+31) of one packed panel over all K -> bp [K/2][32], sc [K/32][32].
void DecodeHalfPanel(const uint8_t* panel, int64_t n_blocks, int h, __m512i table, uint32_t* bp,
                     float* sc) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
    _mm512_store_ps(sc + b * kNr, avx512::Mxfp4RowScales(blk + 32 * h));
    _mm512_store_ps(sc + b * kNr + 16, avx512::Mxfp4RowScales(blk + 32 * h + 16));
    uint32_t* dst = bp + b * 16 * kNr;
    for (int t = 0; t < 4; ++t) {
      for (int gi = 0; gi < 2; ++gi) {
        __m512i r[4];
        avx512::DecodeMxfp4Chunk(blk + 64 + (t * 4 + 2 * h + gi) * 64, table, r);
        for (int j = 0; j < 4; ++j) _mm512_store_si512(dst + (4 * t + j) * kNr + gi * 16, r[j]);
      }
    }
  }
}

}  // namespace

void Mxfp4PanelGemmAvx512(const Mxfp4Call& c, ThreadPool* pool) {
  const int64_t pairs = c.w.k / 2;
  const int64_t n_blocks = c.w.n_blocks();
  const int64_t tiles = (c.n_rows + kMr - 1) / kMr;
  thread_local AlignedBuffer<uint32_t> a_packed;
  a_packed.EnsureSize(static_cast<size_t>(tiles * pairs * kMr));
  uint32_t* a = a_packed.data();
  auto pack = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rows = std::min<int64_t>(kMr, c.n_rows - t * kMr);
      PackActTile(c.xq + t * kMr * c.ldx, rows, c.ldx, c.w.k, kMr, a + t * pairs * kMr);
    }
  };
  const int64_t units = (c.w.n + kNr - 1) / kNr;
  // Units come from a shared counter (a core slowed by other work takes fewer); each unit is
  // computed whole by one thread, so the assignment never changes a bit.
  std::atomic<int64_t> next_unit{0};
  int64_t tb = 0, te = 0;  // the row block of A tiles being computed
  auto work = [&](int) {
    thread_local AlignedBuffer<uint32_t> bp;
    thread_local AlignedBuffer<float> sc;
    bp.EnsureSize(static_cast<size_t>(pairs * kNr));
    sc.EnsureSize(static_cast<size_t>(n_blocks * kNr));
    const __m512i table = avx512::MakeMxfp4WordTable();
    alignas(64) float scratch[kMr * kNr];
    for (int64_t u = next_unit.fetch_add(1, std::memory_order_relaxed); u < units;
         u = next_unit.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t n0 = u * kNr;
      const int64_t n_valid = std::min<int64_t>(kNr, c.w.n - n0);
      DecodeHalfPanel(c.w.panel(u / 2), n_blocks, static_cast<int>(u % 2), table, bp.data(),
                      sc.data());
      const float* s = sc.data();
      auto scales = [s](int64_t b, __m512& s0, __m512& s1) {
        s0 = _mm512_load_ps(s + b * kNr);
        s1 = _mm512_load_ps(s + b * kNr + 16);
      };
      for (int64_t t = tb; t < te; ++t) {
        avx512::PanelTile(a + t * pairs * kMr, bp.data(), n_blocks, scales, scratch);
        avx512::StorePanelTile(scratch, std::min<int64_t>(kMr, c.n_rows - t * kMr), n_valid, c.out,
                               c.ldo, t * kMr, n0, c.out_dtype);
      }
    }
  };
  if (pool == nullptr) {
    pack(0, tiles);
  } else {
    pool->ParallelFor(tiles, 1, pack);
  }
  const int64_t block_tiles = avx512::PanelRowBlockTiles(pairs);
  for (tb = 0; tb < tiles; tb += block_tiles) {
    te = std::min(tiles, tb + block_tiles);
    next_unit.store(0, std::memory_order_relaxed);
    if (pool == nullptr) {
      work(0);
    } else {
      pool->Run(work);
    }
  }
}

}  // namespace deepinfer::kernels
