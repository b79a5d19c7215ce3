// AVX-512 FP8 driver and the panel GEMM for large m.
//
// Panel GEMM (m > kGemvMaxRows): threads take 32-column units of N (one 32-row tile of W, so one
// weight scale per K block) from a shared counter. Per unit the weights are decoded once over the
// full K into an L2-resident bf16 panel [K/2][32] (327 KB at K = 5120); then for each 7-row tile
// of A ([K/2][7] bf16 pairs, packed once per call) the MR7 x NR32 tile of panel_tile_avx512.h
// runs with the block's tile scale as the fold factor; its totals go to a 7x32 scratch tile in L1
// and from there to C.

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/act_pack.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fp8_decode_avx512.h"
#include "kernels/cpu/fp8_gemm_internal.h"
#include "kernels/cpu/panel_tile_avx512.h"

namespace deepinfer::kernels::fp8_internal {

namespace {

constexpr int kMr = avx512::kPanelMr;
constexpr int kNr = avx512::kPanelNr;

// Decodes the 32-row half h of panel p over all K into bp [K/2][32] bf16 pairs.
void ConvertHalfPanel(const PackedFp8Matrix& w, int64_t p, int h, uint32_t* bp) {
  const E4m3Lut lut = LoadE4m3Lut();
  const uint8_t* codes = w.PanelCodes(p);
  const int64_t kb = w.k_blocks();
  for (int64_t b = 0; b < kb; ++b) {
    const uint8_t* blk = codes + b * kFp8BlockBytes;
    uint32_t* dst = bp + b * 16 * kNr;
    for (int s = 0; s < 8; ++s) {
      for (int gi = 0; gi < 2; ++gi) {
        __m512i r0, r1;
        DecodeChunk(lut, _mm512_load_si512(blk + (s * 4 + 2 * h + gi) * kFp8ChunkBytes), r0, r1);
        _mm512_store_si512(dst + (2 * s) * kNr + gi * 16, r0);
        _mm512_store_si512(dst + (2 * s + 1) * kNr + gi * 16, r1);
      }
    }
  }
}

void PanelGemm(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
               const OutView& out, ThreadPool& pool) {
  const int64_t pairs = w.k / 2;
  const int64_t tiles = (m + kMr - 1) / kMr;
  thread_local AlignedBuffer<uint32_t> a_packed;
  a_packed.EnsureSize(static_cast<size_t>(tiles * pairs * kMr));
  uint32_t* a = a_packed.data();
  pool.ParallelFor(tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rows = std::min<int64_t>(kMr, m - t * kMr);
      PackActTile(xq + t * kMr * ldx, rows, ldx, w.k, kMr, a + t * pairs * kMr);
    }
  });
  const int64_t units = (w.n + kNr - 1) / kNr;
  const DType dtype = out.dtype == OutDtype::kF32 ? DType::kF32 : DType::kBF16;
  const int64_t block_tiles = avx512::PanelRowBlockTiles(pairs);
  for (int64_t tb = 0; tb < tiles; tb += block_tiles) {
    const int64_t te = std::min(tiles, tb + block_tiles);
    // Units are handed out one at a time from a shared counter, not in fixed ranges: a core
    // slowed by other work (on the shared host, per-core throughput swings by 10-20% over
    // milliseconds) then takes fewer units instead of holding up the whole call. Each unit is
    // still computed whole by one thread, so the bits do not depend on the assignment.
    std::atomic<int64_t> next_unit{0};
    pool.Run([&](int) {
      thread_local AlignedBuffer<uint32_t> bp;
      bp.EnsureSize(static_cast<size_t>(pairs * kNr));
      alignas(64) float scratch[kMr * kNr];
      for (int64_t u = next_unit.fetch_add(1, std::memory_order_relaxed); u < units;
           u = next_unit.fetch_add(1, std::memory_order_relaxed)) {
        const int64_t p = u / 2;
        const int h = static_cast<int>(u % 2);
        ConvertHalfPanel(w, p, h, bp.data());
        const int64_t n_valid = std::min<int64_t>(kNr, w.n - u * kNr);
        // One weight scale per 32-row tile and K block: the same factor for all 32 columns.
        const float* sc = w.PanelScales(p);
        auto scales = [sc, h](int64_t b, __m512& s0, __m512& s1) {
          s0 = s1 = _mm512_set1_ps(sc[b * 2 + h]);
        };
        for (int64_t t = tb; t < te; ++t) {
          avx512::PanelTile(a + t * pairs * kMr, bp.data(), w.k_blocks(), scales, scratch);
          avx512::StorePanelTile(scratch, std::min<int64_t>(kMr, m - t * kMr), n_valid, out.data,
                                 out.ld, t * kMr, u * kNr, dtype);
        }
      }
    });
  }
}

}  // namespace

void Fp8GemmAvx512(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                   const OutView& out, ThreadPool& pool, Avx512Path path) {
  if (path == Avx512Path::kGemm || (path == Avx512Path::kAuto && m > kGemvMaxRows)) {
    PanelGemm(xq, m, ldx, w, out, pool);
    return;
  }
  const int64_t pairs = w.k / 2;
  thread_local AlignedBuffer<uint32_t> xp_buf;
  xp_buf.EnsureSize(static_cast<size_t>(m * pairs));
  uint32_t* xp = xp_buf.data();
  for (int64_t r0 = 0; r0 < m; r0 += 8) {
    PackActPairs(xq + r0 * ldx, std::min<int64_t>(8, m - r0), ldx, w.k, xp + r0 * pairs);
  }
  pool.ParallelFor(w.n_panels, 1,
                   [&](int64_t p0, int64_t p1) { Fp8GemvPanelsAvx512(xp, m, w, p0, p1, out); });
}

void Fp8GemvManyAvx512(const Fp8GemvJob* jobs, int64_t n_jobs, ThreadPool& pool) {
  // Per job: activations packed as Fp8GemmAvx512 packs them, and its first global panel.
  thread_local AlignedBuffer<uint32_t> xp_buf;
  thread_local std::vector<int64_t> first_panel, xp_at;
  first_panel.assign(1, 0);
  xp_at.assign(1, 0);
  for (int64_t j = 0; j < n_jobs; ++j) {
    first_panel.push_back(first_panel.back() + jobs[j].w->n_panels);
    xp_at.push_back(xp_at.back() + jobs[j].m * (jobs[j].w->k / 2));
  }
  xp_buf.EnsureSize(static_cast<size_t>(xp_at.back()));
  for (int64_t j = 0; j < n_jobs; ++j) {
    const Fp8GemvJob& g = jobs[j];
    uint32_t* xp = xp_buf.data() + xp_at[j];
    for (int64_t r0 = 0; r0 < g.m; r0 += 8) {
      PackActPairs(g.xq + r0 * g.ldx, std::min<int64_t>(8, g.m - r0), g.ldx, g.w->k,
                   xp + r0 * (g.w->k / 2));
    }
  }
  // Global panel range [g0, g1) -> each job's overlapping local range. The lambda runs on pool
  // threads, so it reads the caller's thread_local buffers through these pointers.
  const int64_t* first = first_panel.data();
  const int64_t* at = xp_at.data();
  const uint32_t* xp_all = xp_buf.data();
  pool.ParallelFor(first_panel.back(), 1, [&](int64_t g0, int64_t g1) {
    for (int64_t j = 0; j < n_jobs; ++j) {
      const int64_t b = std::max(g0, first[j]), e = std::min(g1, first[j + 1]);
      if (b < e) {
        Fp8GemvPanelsAvx512(xp_all + at[j], jobs[j].m, *jobs[j].w, b - first[j], e - first[j],
                            jobs[j].out);
      }
    }
  });
}

}  // namespace deepinfer::kernels::fp8_internal
