// AVX2 MXFP4 panel GEMM for many activation rows (prefill experts), the AVX2 counterpart of
// mxfp4_panel_gemm_avx512.cc.
//
// Activations are widened once per row block to fp32 tiles a[K][kMr] in the order the numerics
// contract consumes them (k-pair p as x[2p+1], x[2p]), so the microkernel broadcasts straight
// from memory. Threads take 16-column units of W (one row group of a packed panel) from a shared
// counter; per unit and K chunk of kKc elements the weights are decoded once to fp32 b[kKc][16]
// (16 KB, L1) with the block scales, and every 6-row tile of the row block runs over it: 12
// blocksum accumulators (6 rows x 2 ymm), reset per 32-K block, then tot = fma(blocksum, scale,
// tot) on the tile's totals in an L1 scratch (12 blocksums + 12 totals would not fit 16 ymm).
//
// Order per output element: exactly that of mxfp4_gemm.h (blocksum from +0 over the block's
// k-pairs ascending, odd element first, by FMA; then the scale step, blocks ascending). All
// products are exact (e2m1 x bf16 in fp32), so the plain FMA chain equals the vdpbf16ps order of
// the reference bit for bit, whatever the tile, unit, row block or thread.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/mxfp4_decode_avx2.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels {

namespace {

constexpr int kMr = 6;                       // activation rows per tile
constexpr int kNr = 16;                      // output columns per unit (one packed row group)
constexpr int64_t kKc = 256;                 // K elements decoded per chunk (8 blocks)
constexpr int64_t kRowBlockBytes = 2 << 20;  // fp32 A of one row block (L3-resident)

// Rows [0, rows) of xq (rows <= kMr) -> a[K][kMr] fp32 in contract order; missing rows are 0.
void WidenTile(const uint16_t* xq, int64_t rows, int64_t ldx, int64_t k, float* a) {
  for (int64_t i = 0; i < kMr; ++i) {
    if (i >= rows) {
      for (int64_t kk = 0; kk < k; ++kk) a[kk * kMr + i] = 0.0f;
      continue;
    }
    const uint16_t* x = xq + i * ldx;
    for (int64_t kk = 0; kk < k; kk += 2) {
      a[kk * kMr + i] = Bf16ToFloat(x[kk + 1]);
      a[(kk + 1) * kMr + i] = Bf16ToFloat(x[kk]);
    }
  }
}

// Columns 16g..16g+15 of one packed panel, K blocks [b0, b0 + nb) -> b[nb·32][16] fp32 in
// contract order and s[nb][16] fp32 scales.
void DecodeUnitChunk(const uint8_t* panel, int g, int64_t b0, int64_t nb, const avx2::Mxfp4Lut& lut,
                     float* b, float* s) {
  for (int64_t bi = 0; bi < nb; ++bi) {
    const uint8_t* blk = panel + (b0 + bi) * kMxfp4PanelBlockBytes;
    _mm256_store_ps(s + bi * kNr, avx2::RowScales8(blk + 16 * g));
    _mm256_store_ps(s + bi * kNr + 8, avx2::RowScales8(blk + 16 * g + 8));
    float* dst = b + bi * kMxfp4Block * kNr;
    for (int t = 0; t < 4; ++t) {
      for (int h = 0; h < 2; ++h) {
        __m256 w[8];
        avx2::DecodeHalfChunkF32(blk + 64 + (t * 4 + g) * 64 + h * 32, lut, w);
        for (int q = 0; q < 8; ++q) _mm256_store_ps(dst + (8 * t + q) * kNr + 8 * h, w[q]);
      }
    }
  }
}

// tot[kMr][kNr] += the tile's products over nb K blocks (a: [nb·32][kMr], b: [nb·32][kNr]).
void TileChunk(const float* a, const float* b, const float* s, int64_t nb, float* tot) {
  for (int64_t bi = 0; bi < nb; ++bi) {
    __m256 acc[kMr][2];
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float* ab = a + bi * kMxfp4Block * kMr;
    const float* bb = b + bi * kMxfp4Block * kNr;
#pragma GCC unroll 4
    for (int kk = 0; kk < kMxfp4Block; ++kk) {
      const __m256 b0 = _mm256_load_ps(bb + kk * kNr);
      const __m256 b1 = _mm256_load_ps(bb + kk * kNr + 8);
#pragma GCC unroll 6
      for (int i = 0; i < kMr; ++i) {
        const __m256 x = _mm256_broadcast_ss(ab + kk * kMr + i);
        acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
      }
    }
    const __m256 s0 = _mm256_load_ps(s + bi * kNr), s1 = _mm256_load_ps(s + bi * kNr + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* t = tot + i * kNr;
      _mm256_store_ps(t, _mm256_fmadd_ps(acc[i][0], s0, _mm256_load_ps(t)));
      _mm256_store_ps(t + 8, _mm256_fmadd_ps(acc[i][1], s1, _mm256_load_ps(t + 8)));
    }
  }
}

void StoreTile(const float* tot, int64_t rows, int64_t cols, void* out, DType out_dtype,
               int64_t ldo, int64_t m0, int64_t n0) {
  for (int64_t i = 0; i < rows; ++i) {
    if (out_dtype == DType::kF32) {
      std::memcpy(static_cast<float*>(out) + (m0 + i) * ldo + n0, tot + i * kNr, cols * 4);
    } else {
      uint16_t* o = static_cast<uint16_t*>(out) + (m0 + i) * ldo + n0;
      for (int64_t c = 0; c < cols; ++c) o[c] = FloatToBf16(tot[i * kNr + c]);
    }
  }
}

}  // namespace

void Mxfp4PanelGemmAvx2(const Mxfp4Call& c, ThreadPool* pool) {
  const int64_t k = c.w.k;
  const int64_t n_blocks = c.w.n_blocks();
  const int64_t tile_floats = k * kMr;
  const int64_t tiles = (c.n_rows + kMr - 1) / kMr;
  const int64_t block_tiles = std::clamp<int64_t>(kRowBlockBytes / (tile_floats * 4), 1, tiles);
  thread_local AlignedBuffer<float> a_packed;
  a_packed.EnsureSize(static_cast<size_t>(block_tiles * tile_floats));
  float* a = a_packed.data();
  const int64_t units = (c.w.n + kNr - 1) / kNr;
  std::atomic<int64_t> next_unit{0};
  int64_t tb = 0, te = 0;  // the row block of A tiles being computed
  auto widen = [&](int64_t t0, int64_t t1) {
    for (int64_t t = tb + t0; t < tb + t1; ++t) {
      WidenTile(c.xq + t * kMr * c.ldx, std::min<int64_t>(kMr, c.n_rows - t * kMr), c.ldx, k,
                a + (t - tb) * tile_floats);
    }
  };
  // Units come from a shared counter; each unit is computed whole by one thread, so the
  // assignment never changes a bit.
  auto work = [&](int) {
    thread_local AlignedBuffer<float> b, s, tot;
    b.EnsureSize(static_cast<size_t>(kKc * kNr));
    s.EnsureSize(static_cast<size_t>(kKc / kMxfp4Block * kNr));
    tot.EnsureSize(static_cast<size_t>(block_tiles * kMr * kNr));
    const avx2::Mxfp4Lut lut = avx2::MakeMxfp4Lut();
    for (int64_t u = next_unit.fetch_add(1, std::memory_order_relaxed); u < units;
         u = next_unit.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t n0 = u * kNr;
      const uint8_t* panel = c.w.panel(u / 4);
      std::fill_n(tot.data(), (te - tb) * kMr * kNr, 0.0f);
      for (int64_t b0 = 0; b0 < n_blocks; b0 += kKc / kMxfp4Block) {
        const int64_t nb = std::min<int64_t>(kKc / kMxfp4Block, n_blocks - b0);
        DecodeUnitChunk(panel, static_cast<int>(u % 4), b0, nb, lut, b.data(), s.data());
        for (int64_t t = tb; t < te; ++t) {
          TileChunk(a + (t - tb) * tile_floats + b0 * kMxfp4Block * kMr, b.data(), s.data(), nb,
                    tot.data() + (t - tb) * kMr * kNr);
        }
      }
      for (int64_t t = tb; t < te; ++t) {
        StoreTile(tot.data() + (t - tb) * kMr * kNr, std::min<int64_t>(kMr, c.n_rows - t * kMr),
                  std::min<int64_t>(kNr, c.w.n - n0), c.out, c.out_dtype, c.ldo, t * kMr, n0);
      }
    }
  };
  for (tb = 0; tb < tiles; tb += block_tiles) {
    te = std::min(tiles, tb + block_tiles);
    next_unit.store(0, std::memory_order_relaxed);
    if (pool == nullptr) {
      widen(0, te - tb);
      work(0);
    } else {
      pool->ParallelFor(te - tb, 1, widen);
      pool->Run(work);
    }
  }
}

}  // namespace deepinfer::kernels
