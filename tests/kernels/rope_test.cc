// RoPE + YaRN: frequency table against the published band numbers and a double-precision
// formula; rotation against double math; inverse undoes forward within bf16 rounding.
#include "kernels/cpu/rope.h"
#include "level_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/bf16.h"

namespace deepinfer::kernels {
namespace {

RopeConfig ReleaseCompressed() {  // compressed layers of the release config
  RopeConfig c;
  c.rope_dim = 64;
  c.theta = 160000.0;
  c.original_seq_len = 65536;
  c.factor = 16.0;
  c.beta_fast = 32.0;
  c.beta_slow = 1.0;
  return c;
}

TEST(RopeTest, ReleaseYarnBandMatchesResearchNumbers) {
  // research/engram_yarn_numbers.txt: low=15 high=25; pairs < 15 keep freq, >= 25 use freq/16.
  const YarnBand b = ComputeYarnBand(ReleaseCompressed());
  EXPECT_EQ(b.low, 15);
  EXPECT_EQ(b.high, 25);
  RopeConfig plain = ReleaseCompressed();
  plain.original_seq_len = 0;
  const auto f = BuildRopeFrequencies(ReleaseCompressed());
  const auto f0 = BuildRopeFrequencies(plain);
  ASSERT_EQ(f.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    if (i <= 15) {
      EXPECT_EQ(f[i], f0[i]) << i;  // ramp 0
    }
    if (i >= 25) {
      EXPECT_EQ(f[i], f0[i] / 16.0f) << i;  // ramp 1
    }
    if (i > 15 && i < 25) {
      EXPECT_LT(f[i], f0[i]);
      EXPECT_GT(f[i], f0[i] / 16.0f);
    }
  }
}

TEST(RopeTest, TableMatchesDoubleFormula) {
  for (RopeConfig c : {ReleaseCompressed(), RopeConfig{}}) {
    if (c.original_seq_len == 0) c.theta = 10000.0;
    const auto f = BuildRopeFrequencies(c);
    const YarnBand b = ComputeYarnBand(c);
    for (int i = 0; i < c.rope_dim / 2; ++i) {
      double want = std::pow(c.theta, -2.0 * i / c.rope_dim);
      if (c.original_seq_len > 0) {
        const double ramp =
            std::clamp((i - b.low) / std::max(double(b.high - b.low), 1e-3), 0.0, 1.0);
        want = want / c.factor * ramp + want * (1 - ramp);
      }
      EXPECT_NEAR(f[i], want, want * 4e-7) << i;
    }
  }
}

TEST(RopeTest, TinyFixtureBand) {
  // v41-tiny-a: rope_dim 16, theta 160000, factor 4, original_seq_len 32, beta 32/1.
  RopeConfig c;
  c.rope_dim = 16;
  c.theta = 160000.0;
  c.original_seq_len = 32;
  c.factor = 4.0;
  auto corr = [&](double r) {
    return 16.0 * std::log(32.0 / (r * 2 * std::numbers::pi)) / (2 * std::log(160000.0));
  };
  const YarnBand b = ComputeYarnBand(c);
  EXPECT_EQ(b.low, std::max(static_cast<int>(std::floor(corr(32))), 0));
  EXPECT_EQ(b.high, std::min(static_cast<int>(std::ceil(corr(1))), 15));
  EXPECT_EQ(b.low, 0);
  EXPECT_EQ(b.high, 2);
}

using test_util::RandomBf16;

TEST(RopeTest, RotationMatchesDoubleAndLeavesNopeLanes) {
  const RopeTable table(ReleaseCompressed(), 70000);
  const int head_dim = 512, rope_dim = 64, heads = 4;
  for (int64_t pos : {0, 1, 7, 127, 4096, 65535, 69999}) {
    auto x = RandomBf16(heads * head_dim, static_cast<uint32_t>(pos) + 1);
    auto y = x;
    ApplyRope(y.data(), heads, head_dim, head_dim, rope_dim, table.Row(pos), false);
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < head_dim - rope_dim; ++i)
        ASSERT_EQ(y[h * head_dim + i], x[h * head_dim + i]);
      for (int i = 0; i < rope_dim / 2; ++i) {
        const int k = h * head_dim + head_dim - rope_dim + 2 * i;
        const double angle = static_cast<double>(static_cast<float>(pos) * table.freqs()[i]);
        const double a = Bf16ToFloat(x[k]), b = Bf16ToFloat(x[k + 1]);
        const double re = a * std::cos(angle) - b * std::sin(angle);
        const double im = a * std::sin(angle) + b * std::cos(angle);
        const double tol = std::hypot(a, b) * 0x1p-8;  // bf16 output rounding
        EXPECT_NEAR(Bf16ToFloat(y[k]), re, tol);
        EXPECT_NEAR(Bf16ToFloat(y[k + 1]), im, tol);
      }
      if (pos == 0) {
        for (int i = 0; i < head_dim; ++i) ASSERT_EQ(y[h * head_dim + i], x[h * head_dim + i]);
      }
    }
  }
}

TEST(RopeTest, InverseUndoesForwardWithinBf16Rounding) {
  const RopeTable table(ReleaseCompressed(), 5000);
  const int head_dim = 64, rope_dim = 64;
  for (int64_t pos : {1, 33, 4999}) {
    auto x = RandomBf16(head_dim, static_cast<uint32_t>(pos) * 3);
    auto y = x;
    ApplyRope(y.data(), 1, head_dim, head_dim, rope_dim, table.Row(pos), false);
    ApplyRope(y.data(), 1, head_dim, head_dim, rope_dim, table.Row(pos), true);
    for (int i = 0; i < rope_dim; i += 2) {
      const double norm = std::hypot(Bf16ToFloat(x[i]), Bf16ToFloat(x[i + 1]));
      // Two bf16 roundings (forward, inverse), each <= 2^-9 of the pair norm per lane.
      EXPECT_NEAR(Bf16ToFloat(y[i]), Bf16ToFloat(x[i]), norm * 0x1p-7);
      EXPECT_NEAR(Bf16ToFloat(y[i + 1]), Bf16ToFloat(x[i + 1]), norm * 0x1p-7);
    }
  }
}

}  // namespace
}  // namespace deepinfer::kernels
