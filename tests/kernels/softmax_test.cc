// Row softmax and the shared ExpF32 against double precision.
#include "kernels/cpu/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {
namespace {

TEST(ExpF32Test, WithinTwoUlpOfExactExp) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-87.0f, 88.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = dist(rng);
    const double want = std::exp(static_cast<double>(x));
    const float got = ExpF32(x);
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    ASSERT_LE(std::fabs(got - want), 2 * ulp) << x;
  }
  EXPECT_EQ(ExpF32(0.0f), 1.0f);
  EXPECT_EQ(ExpF32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ExpF32(-1e30f), 0.0f);
  EXPECT_EQ(ExpF32(1e30f), std::numeric_limits<float>::infinity());
  EXPECT_GT(ExpF32(-100.0f), 0.0f);  // subnormal result, not flushed
}

TEST(SoftmaxTest, RowsSumToOneAndMatchDouble) {
  const int64_t rows = 4, n = 384;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> x(rows * n), y(rows * n);
  for (auto& v : x) v = dist(rng);
  x[5] = -std::numeric_limits<float>::infinity();
  SoftmaxRows(x.data(), n, y.data(), n, rows, n);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e300, s = 0, total = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, double(x[r * n + i]));
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[r * n + i] - m);
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(x[r * n + i] - m) / s;
      EXPECT_NEAR(y[r * n + i], want, want * 2e-6 + 1e-12);
      total += y[r * n + i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  EXPECT_EQ(y[5], 0.0f);
}

TEST(SoftmaxTest, AllMaskedRowGivesZerosInPlace) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, -inf, -inf, 1.0f, 1.0f, -inf};
  SoftmaxRows(x.data(), 3, x.data(), 3, 2, 3);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_EQ(x[3], 0.5f);
  EXPECT_EQ(x[4], 0.5f);
  EXPECT_EQ(x[5], 0.0f);
}

}  // namespace
}  // namespace deepinfer::kernels
