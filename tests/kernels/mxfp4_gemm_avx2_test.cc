// The AVX2 MXFP4 paths (GEMV-M of mxfp4_gemm_avx2.cc, panel GEMM of mxfp4_panel_gemm_avx2.cc)
// bit for bit against the scalar reference on the checkpoint layout: odd row counts, n not a
// multiple of the 16-column unit, several k (K chunk tails), strided rows with NaN gaps, extreme
// scales, several row blocks, one and two threads.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "level_test_util.h"
#include "mxfp4_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::OutputBits;

using test_util::Mxfp4Weights;
enum class Path { kGemv, kPanelGemm, kPublic };

void Run(Path path, const Mxfp4Call& call, ThreadPool* pool) {
  switch (path) {
    case Path::kGemv:  // the panel kernel over all panels, any row count
      if (pool == nullptr) {
        Mxfp4PanelsAvx2(call, 0, call.w.n_panels());
      } else {
        pool->ParallelFor(call.w.n_panels(), 1,
                          [&](int64_t b, int64_t e) { Mxfp4PanelsAvx2(call, b, e); });
      }
      break;
    case Path::kPanelGemm:
      Mxfp4PanelGemmAvx2(call, pool);
      break;
    case Path::kPublic:
      Mxfp4GemmAt(CpuLevel::kAvx2, call.w, call.xq, call.n_rows, call.ldx, call.out, call.out_dtype,
                  call.ldo, pool);
      break;
  }
}

const char* PathName(Path p) {
  return p == Path::kGemv ? "gemv" : p == Path::kPanelGemm ? "panel_gemm" : "public";
}

struct Shape {
  int64_t n, k, m, ldx, ldo;
};

void ExpectMatchesRef(Path path, const Shape& s, int lo, int hi, float sigma, ThreadPool* pool,
                      uint32_t seed) {
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(s.n, s.k, seed, lo, hi);
  const Mxfp4Source src{w.weight.data(), w.scale.data(), s.n};
  auto packed = PackedMxfp4Matrix::Pack({&src, 1}, s.k);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  const std::vector<uint16_t> xq =
      test_util::RandomStridedActivations(s.m, s.k, s.ldx, seed + 1, sigma);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const size_t es = dt == DType::kF32 ? 4 : 2;
    std::vector<uint8_t> want(s.m * s.ldo * es, 0xAB), got(s.m * s.ldo * es, 0xAB);
    Mxfp4GemmRef(w.weight.data(), w.scale.data(), s.n, s.k, xq.data(), s.m, s.ldx, want.data(), dt,
                 s.ldo);
    Run(path, Mxfp4Call{packed->view(), xq.data(), s.m, s.ldx, nullptr, got.data(), dt, s.ldo},
        pool);
    // Columns past n keep the 0xAB filler in both buffers, so this also checks for overruns.
    ASSERT_EQ(OutputBits(got, dt), OutputBits(want, dt))
        << PathName(path) << " n " << s.n << " k " << s.k << " m " << s.m << " ldx " << s.ldx
        << " ldo " << s.ldo << " bf16 " << (dt == DType::kBF16) << " scales " << lo << ".." << hi
        << " sigma " << sigma << " threads " << (pool ? pool->size() : 0);
  }
}

using test_util::HaveAvx2;

TEST(Mxfp4GemmAvx2, BitIdenticalToReferenceOverOddShapes) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool2(2);
  uint32_t seed = 1;
  for (Path path : {Path::kGemv, Path::kPanelGemm, Path::kPublic}) {
    for (int64_t n : {1, 17, 40, 100, 130}) {
      for (int64_t k : {32, 96, 288, 544}) {  // 288, 544: a partial K chunk after full ones
        for (int64_t m : {1, 2, 3, 7, 8, 9, 33, 200}) {
          if (path == Path::kGemv && m > 40 && k > 96) continue;  // slow, covered below
          ThreadPool* pool = (seed / 7) % 2 ? &pool2 : nullptr;
          ExpectMatchesRef(path, {n, k, m, k, n}, 120, 130, 1.0f, pool, seed += 7);
        }
      }
    }
  }
}

TEST(Mxfp4GemmAvx2, StridedRowsAndExtremeScales) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool2(2);
  uint32_t seed = 500;
  for (Path path : {Path::kGemv, Path::kPanelGemm}) {
    for (int64_t m : {1, 5, 8, 31, 45}) {
      // ldx > k with NaN gaps (must never be read), ldo > n (columns past n untouched).
      ExpectMatchesRef(path, {80, 96, m, 96 + 32, 80 + 5}, 120, 130, 1.0f, &pool2, seed += 3);
      // Scale code 0 (subnormal 2^-127: subnormal totals, bf16 RNE of them) and large codes
      // (inf totals), with tiny and huge activations.
      for (float sigma : {1.0f, 1e-3f, 1e30f}) {
        ExpectMatchesRef(path, {70, 128, m, 128, 70}, 0, 3, sigma, nullptr, seed += 3);
        ExpectMatchesRef(path, {70, 128, m, 128, 70}, 240, 254, sigma, &pool2, seed += 3);
        ExpectMatchesRef(path, {70, 128, m, 128, 70}, 0, 254, sigma, &pool2, seed += 3);
      }
    }
  }
}

// More rows than one row block of the widened A (2 MiB: 10 tiles = 60 rows at K = 8192).
TEST(Mxfp4GemmAvx2, PanelGemmSeveralRowBlocks) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool2(2);
  ExpectMatchesRef(Path::kPanelGemm, {33, 8192, 125, 8192, 33}, 120, 130, 1.0f, nullptr, 201);
  ExpectMatchesRef(Path::kPanelGemm, {33, 8192, 125, 8192, 33}, 120, 130, 1.0f, &pool2, 203);
}

// Every row keeps its bits whatever the batch around it: the public entry point runs GEMV-M below
// kMxfp4Avx2PanelGemmMinRows rows and the panel GEMM from there on.
TEST(Mxfp4GemmAvx2, RowsMatchSmallBatches) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  const int64_t n = 160, k = 320, m = kMxfp4Avx2PanelGemmMinRows + 9;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 77, 118, 132);
  const Mxfp4Source src{w.weight.data(), w.scale.data(), n};
  auto packed = PackedMxfp4Matrix::Pack({&src, 1}, k);
  ASSERT_TRUE(packed.ok());
  const std::vector<uint16_t> xq = test_util::RandomStridedActivations(m, k, k, 78);
  ThreadPool pool2(2);
  std::vector<float> all(m * n);
  Mxfp4GemmAt(CpuLevel::kAvx2, packed->view(), xq.data(), m, k, all.data(), DType::kF32, n, &pool2);
  for (int64_t start : {int64_t{0}, int64_t{5}, m - 8}) {
    for (int64_t rows : {1, 3, 8}) {
      std::vector<float> part(rows * n);
      Mxfp4GemmAt(CpuLevel::kAvx2, packed->view(), xq.data() + start * k, rows, k, part.data(),
                  DType::kF32, n, &pool2);
      EXPECT_EQ(0, std::memcmp(part.data(), all.data() + start * n, rows * n * sizeof(float)))
          << "start " << start << " rows " << rows;
    }
  }
}

}  // namespace
}  // namespace deepinfer::kernels
