// MXFP4 GEMM entry points: argument checks, activation packing for GEMV-M, thread split over N
// panels, run-time choice of the kernel level; plus the scalar kernel on the packed layout.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/e2m1.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "kernels/cpu/dpbf16_step.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels {

void Mxfp4PanelsScalar(const Mxfp4Call& c, int64_t p_begin, int64_t p_end) {
  uint32_t pair_of_byte[256];  // checkpoint byte -> bf16 pair (even low, odd high)
  for (int v = 0; v < 256; ++v) {
    pair_of_byte[v] =
        FloatToBf16(E2m1ToFloat(static_cast<uint8_t>(v & 0xF))) |
        (static_cast<uint32_t>(FloatToBf16(E2m1ToFloat(static_cast<uint8_t>(v >> 4)))) << 16);
  }
  const int64_t n_blocks = c.w.n_blocks();
  for (int64_t p = p_begin; p < p_end; ++p) {
    const uint8_t* panel = c.w.panel(p);
    const int64_t n0 = p * kMxfp4PanelRows;
    const int64_t valid = std::min<int64_t>(kMxfp4PanelRows, c.w.n - n0);
    for (int64_t m = 0; m < c.n_rows; ++m) {
      const uint16_t* x = c.xq + m * c.ldx;
      for (int64_t r64 = 0; r64 < valid; ++r64) {
        const int64_t g = r64 / 16, r = r64 % 16;
        float tot = 0.0f;
        for (int64_t b = 0; b < n_blocks; ++b) {
          const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
          float blocksum = 0.0f;
          for (int64_t q = 0; q < 16; ++q) {
            const int64_t t = q / 4, j = q % 4;
            uint32_t dword;
            std::memcpy(&dword, blk + 64 + (t * 4 + g) * 64 + 4 * r, 4);
            blocksum = DpBf16Step(blocksum, LoadBf16Pair(x + 2 * (b * 16 + q)),
                                  pair_of_byte[Mxfp4CheckpointByte(dword, static_cast<int>(j))]);
          }
          tot = std::fma(blocksum, Ue8m0ToFloat(blk[r64]), tot);
        }
        if (c.out_dtype == DType::kF32) {
          static_cast<float*>(c.out)[m * c.ldo + n0 + r64] = tot;
        } else {
          static_cast<uint16_t*>(c.out)[m * c.ldo + n0 + r64] = FloatToBf16(tot);
        }
      }
    }
  }
}

namespace {

void CheckCall(CpuLevel level, const PackedMxfp4View& w, int64_t ldx, DType out_dtype,
               int64_t ldo) {
  CHECK(static_cast<int>(level) <= static_cast<int>(GetCpuFeatures().BestLevel()))
      << "CPU level " << CpuLevelName(level) << " not supported here";
  CHECK(out_dtype == DType::kF32 || out_dtype == DType::kBF16) << "MXFP4 GEMM output dtype";
  CHECK(w.k % kMxfp4Block == 0 && ldx >= w.k && ldo >= w.n)
      << "k " << w.k << " ldx " << ldx << " n " << w.n << " ldo " << ldo;
}

// GEMV-M activation layout (mxfp4_gemm_kernels.h) of n_rows rows into dst.
void PackChunks(const uint16_t* xq, int64_t n_rows, int64_t ldx, int64_t k, uint32_t* dst) {
  const int64_t n_pairs = k / 2;
  for (int64_t m0 = 0; m0 < n_rows; m0 += kMxfp4ChunkRows) {
    const int64_t rows = std::min<int64_t>(kMxfp4ChunkRows, n_rows - m0);
    uint32_t* d = dst + m0 * n_pairs;
    for (int64_t i = 0; i < rows; ++i) {
      const uint16_t* x = xq + (m0 + i) * ldx;
      for (int64_t q = 0; q < n_pairs; ++q) d[q * rows + i] = LoadBf16Pair(x + 2 * q);
    }
  }
}

void RunPanels(CpuLevel level, const Mxfp4Call& call, int64_t p_begin, int64_t p_end) {
  switch (level) {
    case CpuLevel::kAvx512:
      Mxfp4PanelsAvx512(call, p_begin, p_end);
      break;
    case CpuLevel::kAvx2:
      Mxfp4PanelsAvx2(call, p_begin, p_end);
      break;
    case CpuLevel::kScalar:
      Mxfp4PanelsScalar(call, p_begin, p_end);
      break;
  }
}

}  // namespace

void Mxfp4GemmMany(std::span<const Mxfp4Job> jobs, ThreadPool* pool) {
  const CpuLevel level = ActiveCpuLevel();
  std::vector<Mxfp4Call> small;
  std::vector<int64_t> first_panel{0};  // prefix sums of the small jobs' panel counts
  size_t packed_words = 0;
  for (const Mxfp4Job& j : jobs) {
    if (j.n_rows <= 0 || j.w.n <= 0) continue;
    if (j.n_rows >= Mxfp4PanelGemmMinRows(level)) {
      Mxfp4GemmAt(level, j.w, j.xq, j.n_rows, j.ldx, j.out, j.out_dtype, j.ldo, pool);
      continue;
    }
    CheckCall(level, j.w, j.ldx, j.out_dtype, j.ldo);
    small.push_back(Mxfp4Call{j.w, j.xq, j.n_rows, j.ldx, nullptr, j.out, j.out_dtype, j.ldo});
    first_panel.push_back(first_panel.back() + j.w.n_panels());
    if (j.n_rows > 1) packed_words += static_cast<size_t>(j.n_rows * j.w.k / 2);
  }
  if (small.empty()) return;
  thread_local std::vector<uint32_t> xpacked;
  if (level == CpuLevel::kAvx512 && packed_words > 0) {
    xpacked.resize(packed_words);
    size_t at = 0;
    for (Mxfp4Call& c : small) {
      if (c.n_rows == 1) continue;
      PackChunks(c.xq, c.n_rows, c.ldx, c.w.k, xpacked.data() + at);
      c.xpacked = xpacked.data() + at;
      at += static_cast<size_t>(c.n_rows * c.w.k / 2);
    }
  }
  // Global panel range [g0, g1) -> each job's overlapping local range.
  auto run = [&](int64_t g0, int64_t g1) {
    for (size_t i = 0; i < small.size(); ++i) {
      const int64_t b = std::max(g0, first_panel[i]), e = std::min(g1, first_panel[i + 1]);
      if (b < e) RunPanels(level, small[i], b - first_panel[i], e - first_panel[i]);
    }
  };
  if (pool == nullptr) {
    run(0, first_panel.back());
  } else {
    pool->ParallelFor(first_panel.back(), 1, run);
  }
}

void Mxfp4GemmAt(CpuLevel level, const PackedMxfp4View& w, const uint16_t* xq, int64_t n_rows,
                 int64_t ldx, void* out, DType out_dtype, int64_t ldo, ThreadPool* pool) {
  CheckCall(level, w, ldx, out_dtype, ldo);
  if (n_rows <= 0 || w.n <= 0) return;
  Mxfp4Call call{w, xq, n_rows, ldx, nullptr, out, out_dtype, ldo};
  if (level == CpuLevel::kAvx512 && n_rows >= kMxfp4PanelGemmMinRows) {
    Mxfp4PanelGemmAvx512(call, pool);
    return;
  }
  if (level == CpuLevel::kAvx2 && n_rows >= kMxfp4Avx2PanelGemmMinRows) {
    Mxfp4PanelGemmAvx2(call, pool);
    return;
  }
  // GEMV-M reads activation k-pairs as [chunk][pair][rows of the chunk]; thread_local so that
  // steady-state calls do not allocate (callers may run this inside their own thread regions).
  thread_local std::vector<uint32_t> xpacked;
  if (level == CpuLevel::kAvx512 && n_rows > 1) {
    xpacked.resize(static_cast<size_t>(n_rows * w.k / 2));
    PackChunks(xq, n_rows, ldx, w.k, xpacked.data());
    call.xpacked = xpacked.data();
  }
  auto run = [&](int64_t p_begin, int64_t p_end) { RunPanels(level, call, p_begin, p_end); };
  if (pool == nullptr) {
    run(0, w.n_panels());
  } else {
    pool->ParallelFor(w.n_panels(), 1, run);
  }
}

void Mxfp4Gemm(const PackedMxfp4View& w, const uint16_t* xq, int64_t n_rows, int64_t ldx, void* out,
               DType out_dtype, int64_t ldo, ThreadPool* pool) {
  Mxfp4GemmAt(ActiveCpuLevel(), w, xq, n_rows, ldx, out, out_dtype, ldo, pool);
}

}  // namespace deepinfer::kernels
