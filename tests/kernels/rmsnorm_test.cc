// RMSNorm: scalar reference vs a double-precision expectation, AVX-512 vs scalar bit for bit.
#include "kernels/cpu/rmsnorm.h"
#include "level_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {
namespace {

using test_util::RandomBf16;

RmsNormParams Params(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w,
                     std::vector<uint16_t>& y, int64_t rows, int64_t dim) {
  RmsNormParams p;
  p.x = x.data();
  p.x_stride = dim;
  p.weight = w.data();
  p.y = y.data();
  p.y_stride = dim;
  p.n_rows = rows;
  p.dim = dim;
  p.eps = 1e-20f;
  return p;
}

TEST(RmsNormTest, ReferenceMatchesDoublePrecision) {
  const int64_t rows = 8, dim = 5120;
  auto x = RandomBf16(rows * dim, 1, 3.0f);
  auto w = RandomBf16(dim, 2, 0.2f);
  std::vector<uint16_t> y(rows * dim);
  RmsNormRef(Params(x, w, y, rows, dim));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += std::pow(Bf16ToFloat(x[r * dim + i]), 2);
    const double f = 1.0 / std::sqrt(ss / dim + 1e-20);
    for (int64_t i = 0; i < dim; ++i) {
      const double want = Bf16ToFloat(w[i]) * Bf16ToFloat(x[r * dim + i]) * f;
      const double got = Bf16ToFloat(y[r * dim + i]);
      // One bf16 rounding of the output (2^-9 relative) plus a few fp32 ulps before it.
      EXPECT_NEAR(got, want, std::fabs(want) * (0x1p-8) + 1e-30) << r << "," << i;
    }
  }
}

TEST(RmsNormTest, TinyEpsKeepsZeroRowFinite) {
  // eps = 1e-20 as fp32 keeps rsqrt finite for an all-zero row; output is zero.
  std::vector<uint16_t> x(64, 0), w(64, FloatToBf16(1.0f)), y(64, 0xFFFF);
  RmsNormRef(Params(x, w, y, 1, 64));
  for (uint16_t v : y) EXPECT_EQ(v, 0);
}

TEST(RmsNormTest, VectorPathsBitIdenticalToReference) {
  std::vector<std::pair<const char*, void (*)(const RmsNormParams&)>> paths;
  if (ActiveCpuLevel() >= CpuLevel::kAvx2) paths.push_back({"avx2", RmsNormAvx2});
  if (ActiveCpuLevel() == CpuLevel::kAvx512) paths.push_back({"avx512", RmsNormAvx512});
  if (paths.empty()) GTEST_SKIP() << "no AVX2";
  for (int64_t dim : {1, 15, 16, 64, 100, 448, 512, 1280, 5120, 5121}) {
    const int64_t rows = 5;
    auto x = RandomBf16(rows * dim, static_cast<uint32_t>(dim), 1.5f);
    auto w = RandomBf16(dim, static_cast<uint32_t>(dim + 7), 0.5f);
    std::vector<uint16_t> y_ref(rows * dim);
    RmsNormRef(Params(x, w, y_ref, rows, dim));
    for (const auto& [name, run] : paths) {
      std::vector<uint16_t> y_vec(rows * dim);
      run(Params(x, w, y_vec, rows, dim));
      EXPECT_EQ(y_ref, y_vec) << name << " dim " << dim;
    }
  }
}

TEST(RmsNormTest, RowResultIndependentOfBatch) {
  const int64_t rows = 7, dim = 5120;
  auto x = RandomBf16(rows * dim, 11, 1.0f);
  auto w = RandomBf16(dim, 12, 0.5f);
  std::vector<uint16_t> all(rows * dim), one(dim);
  RmsNorm(Params(x, w, all, rows, dim));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<uint16_t> xr(x.begin() + r * dim, x.begin() + (r + 1) * dim);
    RmsNorm(Params(xr, w, one, 1, dim));
    EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + r * dim)) << "row " << r;
  }
}

TEST(RmsNormTest, InPlace) {
  const int64_t dim = 512;
  auto x = RandomBf16(dim, 3, 1.0f);
  auto w = RandomBf16(dim, 4, 0.5f);
  std::vector<uint16_t> y(dim);
  RmsNorm(Params(x, w, y, 1, dim));
  RmsNormParams p = Params(x, w, x, 1, dim);
  RmsNorm(p);
  EXPECT_EQ(x, y);
}

}  // namespace
}  // namespace deepinfer::kernels
