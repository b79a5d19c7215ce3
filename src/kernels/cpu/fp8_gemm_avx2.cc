// AVX2 + FMA FP8 driver and the register-blocked GEMM (m >= 2).
//
// m = 1 runs the GEMV (fp8_gemv_avx2.cc) over contiguous panel ranges. Otherwise, per group of
// up to kRowGroup rows (activations widened to fp32 tiles once per group), the work is cut into
// units of (row block of up to kRowBlock rows, one 64-row panel), handed out from a shared
// counter, row blocks outermost so both threads share one row block's activations in L3. Per unit
// and K block the panel-block is decoded once to fp32 wf [32 k][64] (8 KiB, L1) and every 6-row
// tile of the row block runs a 6 x 16 microkernel over it for each 16-column quarter: 12 ymm
// accumulators, 2 weight loads and 6 `vbroadcastss` of pre-widened activations per k. Its block
// sums fold into fp32 totals [rows][64] with one FMA by the tile scale (fp8_gemm.h). Register
// blocking changes no element's order: each output is still its own chain, k 1, 0, 3, 2, ...
// Products are exact, so each FMA rounds like the `vdpbf16ps` step and the bits equal the
// reference's.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fp8_decode_avx2.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

namespace {

constexpr int kMr = kAvx2TileRows;
// Rows per unit: 16 tiles. Decode costs ~1/30 of a unit's FMAs; totals 24 KiB.
constexpr int64_t kRowBlock = 16 * kMr;
// Rows packed (to fp32) and run at a time: bounds the packed activations at 384·k floats
// (12 MiB at k = 8192) and keeps them in L3-sized pieces; W is re-read once per group.
constexpr int64_t kRowGroup = 4 * kRowBlock;
// Parallel act packing pays off above this many rows.
constexpr int64_t kPackRowsPerThread = 64;

// The view from row `row` on.
OutView RowsFrom(const OutView& out, int64_t row) {
  const int64_t elem = out.dtype == OutDtype::kF32 ? 4 : 2;
  return {static_cast<char*>(out.data) + row * out.ld * elem, out.ld, out.dtype};
}

// Panel-block -> wf [32 k][64 rows] fp32.
void DecodeBlockF32(const E4m3LutAvx2& lut, const uint8_t* blk, float* wf) {
  for (int s = 0; s < 8; ++s) {
    for (int q = 0; q < 8; ++q) {  // chunk half q: rows 8q..8q+7 of k 4s..4s+3
      __m256i p01, p23;
      DecodeHalfChunk(lut,
                      _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + s * 256 + q * 32)),
                      p01, p23);
      float* dst = wf + 4 * s * kFp8PanelRows + 8 * q;
      _mm256_store_ps(dst, EvenF32(p01));
      _mm256_store_ps(dst + kFp8PanelRows, OddF32(p01));
      _mm256_store_ps(dst + 2 * kFp8PanelRows, EvenF32(p23));
      _mm256_store_ps(dst + 3 * kFp8PanelRows, OddF32(p23));
    }
  }
}

// R rows x 16 columns over one K block. xt: [32][R] fp32; wf: the 16 columns' first value, row
// stride 64; tot: [R] rows of stride 64 at the same columns.
template <int R>
inline void TileBlock(const float* xt, const float* wf, __m256 scale, float* tot) {
  __m256 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int j = 0; j < 16; ++j) {
    for (int odd = 1; odd >= 0; --odd) {
      const int k = 2 * j + odd;
      const __m256 w0 = _mm256_load_ps(wf + k * kFp8PanelRows);
      const __m256 w1 = _mm256_load_ps(wf + k * kFp8PanelRows + 8);
      for (int i = 0; i < R; ++i) {
        const __m256 xb = _mm256_broadcast_ss(xt + k * R + i);
        acc[i][0] = _mm256_fmadd_ps(xb, w0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(xb, w1, acc[i][1]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    float* t = tot + i * kFp8PanelRows;
    _mm256_store_ps(t, _mm256_fmadd_ps(acc[i][0], scale, _mm256_load_ps(t)));
    _mm256_store_ps(t + 8, _mm256_fmadd_ps(acc[i][1], scale, _mm256_load_ps(t + 8)));
  }
}

using TileFn = void (*)(const float*, const float*, __m256, float*);
constexpr TileFn kTile[kMr + 1] = {nullptr,      TileBlock<1>, TileBlock<2>, TileBlock<3>,
                                   TileBlock<4>, TileBlock<5>, TileBlock<6>};

// Rows [r0, r1) (r0 a multiple of kMr, r1 - r0 <= kRowBlock) of panel p. xp: PackActF32Tiles of
// all m rows. `prefetch`: this call streams the panel from memory (its first row block, where
// StreamPrefetchStyle() says spread): each block's lines go to L2 and L1 ahead as in the GEMV.
void PanelRows(const E4m3LutAvx2& lut, const float* xp, int64_t m, int64_t r0, int64_t r1,
               const PackedFp8Matrix& w, int64_t p, bool prefetch, const OutView& out) {
  alignas(32) float wf[kFp8BlockK * kFp8PanelRows];
  alignas(32) float tot[kRowBlock * kFp8PanelRows];
  const int64_t k = w.k, kb = w.k_blocks();
  const int64_t rows = r1 - r0;
  std::fill(tot, tot + rows * kFp8PanelRows, 0.0f);
  const uint8_t* codes = w.PanelCodes(p);
  const float* sc = w.PanelScales(p);
  for (int64_t b = 0; b < kb; ++b) {
    const char* blk = reinterpret_cast<const char*>(codes + b * kFp8BlockBytes);
    for (int64_t i = 0; prefetch && i < kFp8BlockBytes; i += 64) {
      _mm_prefetch(blk + i + kGemvL2PrefetchBytes, _MM_HINT_T1);
      _mm_prefetch(blk + i + kGemvPrefetchBytes, _MM_HINT_T0);
    }
    DecodeBlockF32(lut, codes + b * kFp8BlockBytes, wf);
    const __m256 s_lo = _mm256_broadcast_ss(sc + 2 * b), s_hi = _mm256_broadcast_ss(sc + 2 * b + 1);
    for (int64_t r = r0; r < r1; r += kMr) {
      const int tr = static_cast<int>(std::min<int64_t>(kMr, m - r));
      const float* xt = xp + r * k + b * kFp8BlockK * tr;
      float* t = tot + (r - r0) * kFp8PanelRows;
      const TileFn fn = kTile[tr];
      for (int c = 0; c < 4; ++c) fn(xt, wf + 16 * c, c < 2 ? s_lo : s_hi, t + 16 * c);
    }
  }
  const int64_t n_valid = std::min<int64_t>(kFp8PanelRows, w.n - p * kFp8PanelRows);
  for (int64_t i = 0; i < rows; ++i) {
    StoreRowScalar(out, r0 + i, p * kFp8PanelRows, tot + i * kFp8PanelRows, n_valid);
  }
}

// Panels [p0, p1) of one job for all its rows (GEMV for m = 1).
void JobPanels(const float* xp, int64_t m, const PackedFp8Matrix& w, int64_t p0, int64_t p1,
               const OutView& out) {
  if (m == 1) {
    Fp8Gemv1PanelsAvx2(xp, w, p0, p1, out);
    return;
  }
  const E4m3LutAvx2 lut = LoadE4m3LutAvx2();
  const bool prefetch = StreamPrefetchStyle() == StreamPrefetch::kSpread;
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
      PanelRows(lut, xp, m, r0, std::min(m, r0 + kRowBlock), w, p, prefetch && r0 == 0, out);
    }
  }
}

void PackAll(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, float* xp, ThreadPool& pool) {
  if (m < 2 * kPackRowsPerThread) {
    PackActF32Tiles(xq, m, ldx, k, xp);
    return;
  }
  const int64_t tiles = (m + kMr - 1) / kMr;
  pool.ParallelFor(tiles, kPackRowsPerThread / kMr, [&](int64_t t0, int64_t t1) {
    const int64_t r0 = t0 * kMr, r1 = std::min(m, t1 * kMr);
    PackActF32Tiles(xq + r0 * ldx, r1 - r0, ldx, k, xp + r0 * k);
  });
}

}  // namespace

void PackActF32Tiles(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, float* out) {
  for (int64_t r0 = 0; r0 < m; r0 += kMr) {
    const int64_t tr = std::min<int64_t>(kMr, m - r0);
    float* dst = out + r0 * k;
    for (int64_t i = 0; i < tr; ++i) {
      const uint16_t* row = xq + (r0 + i) * ldx;
      for (int64_t c = 0; c < k; ++c) dst[c * tr + i] = Bf16ToFloat(row[c]);
    }
  }
}

void Fp8GemmAvx2(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                 const OutView& out, ThreadPool& pool) {
  if (w.nan_codes) {
    Fp8GemmScalar(xq, m, ldx, w, out, pool);
    return;
  }
  thread_local AlignedBuffer<float> xp_buf;
  xp_buf.EnsureSize(static_cast<size_t>(std::min(m, kRowGroup) * w.k));
  float* xp = xp_buf.data();
  if (m == 1) {
    PackActF32Tiles(xq, 1, ldx, w.k, xp);
    pool.ParallelFor(w.n_panels, 1,
                     [&](int64_t p0, int64_t p1) { Fp8Gemv1PanelsAvx2(xp, w, p0, p1, out); });
    return;
  }
  for (int64_t g0 = 0; g0 < m; g0 += kRowGroup) {
    const int64_t rows = std::min(kRowGroup, m - g0);
    PackAll(xq + g0 * ldx, rows, ldx, w.k, xp, pool);
    const OutView group_out = RowsFrom(out, g0);
    // Units row-block-major; which thread runs a unit depends on timing, its bits do not.
    const int64_t row_blocks = (rows + kRowBlock - 1) / kRowBlock;
    // The units of the first group's first row block read the weights from memory.
    const bool prefetch = StreamPrefetchStyle() == StreamPrefetch::kSpread && g0 == 0;
    pool.ParallelForDynamic(row_blocks * w.n_panels, 1, [&](int64_t u0, int64_t u1) {
      const E4m3LutAvx2 lut = LoadE4m3LutAvx2();
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t r0 = (u / w.n_panels) * kRowBlock;
        PanelRows(lut, xp, rows, r0, std::min(rows, r0 + kRowBlock), w, u % w.n_panels,
                  prefetch && r0 == 0, group_out);
      }
    });
  }
}

void Fp8GemvManyAvx2(const Fp8GemvJob* jobs, int64_t n_jobs, ThreadPool& pool) {
  for (int64_t j = 0; j < n_jobs; ++j) {
    if (jobs[j].w->nan_codes) {  // rare: the whole call goes job by job
      for (int64_t i = 0; i < n_jobs; ++i) {
        Fp8GemmAvx2(jobs[i].xq, jobs[i].m, jobs[i].ldx, *jobs[i].w, jobs[i].out, pool);
      }
      return;
    }
  }
  // Per job: activations packed as Fp8GemmAvx2 packs them, and its first global panel.
  thread_local AlignedBuffer<float> xp_buf;
  thread_local std::vector<int64_t> first_panel, xp_at;
  first_panel.assign(1, 0);
  xp_at.assign(1, 0);
  for (int64_t j = 0; j < n_jobs; ++j) {
    first_panel.push_back(first_panel.back() + jobs[j].w->n_panels);
    xp_at.push_back(xp_at.back() + jobs[j].m * jobs[j].w->k);
  }
  xp_buf.EnsureSize(static_cast<size_t>(xp_at.back()));
  for (int64_t j = 0; j < n_jobs; ++j) {
    PackActF32Tiles(jobs[j].xq, jobs[j].m, jobs[j].ldx, jobs[j].w->k, xp_buf.data() + xp_at[j]);
  }
  // The lambda runs on pool threads: it reads the caller's thread_local buffers through these.
  const int64_t* first = first_panel.data();
  const int64_t* at = xp_at.data();
  const float* xp_all = xp_buf.data();
  pool.ParallelFor(first_panel.back(), 1, [&](int64_t g0, int64_t g1) {
    for (int64_t j = 0; j < n_jobs; ++j) {
      const int64_t b = std::max(g0, first[j]), e = std::min(g1, first[j + 1]);
      if (b < e)
        JobPanels(xp_all + at[j], jobs[j].m, *jobs[j].w, b - first[j], e - first[j], jobs[j].out);
    }
  });
}

}  // namespace deepinfer::kernels::fp8_internal
