#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "engine/sampling/philox.h"

namespace deepinfer::engine {
namespace {

// Random123 tests/kat_vectors, "philox4x32 10" lines (counter, key, expected output).
TEST(SamplingPhilox, KnownAnswerVectors) {
  struct Kat {
    PhiloxCounter counter;
    PhiloxKey key;
    std::array<uint32_t, 4> expected;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& kat : kats) EXPECT_EQ(Philox4x32_10(kat.counter, kat.key), kat.expected);
}

TEST(SamplingPhilox, BlockLayoutMapsSeedPositionAndIndex) {
  // key = seed (low word first), counter = {position low, position high, index, block}.
  const uint64_t seed = 0x299f31d0a4093822ull;
  EXPECT_EQ(
      PhiloxBlock(seed, 0x13198a2e, 0x05a308d3243f6a88ll, 0x03707344),
      Philox4x32_10({0x243f6a88, 0x05a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}));
  // The uniforms take their words from that block: float lane 1 = word 1 of block 0.
  const auto b0 = PhiloxBlock(5, 1, 9, 0);
  EXPECT_EQ(PhiloxUniformFloat(5, 1, 9, 1), static_cast<float>(b0[1] >> 8) * 0x1.0p-24f);
  const auto b1 = PhiloxBlock(5, 1, 9, 1);
  EXPECT_EQ(PhiloxUniformDouble(5, 1, 9, 3),
            static_cast<double>(((uint64_t{b1[2]} << 32) | b1[3]) >> 11) * 0x1.0p-53);
}

TEST(SamplingPhilox, UniformsAreInRangeAndUniform) {
  // 200,000 draws over positions: mean 1/2 and variance 1/12 within 5 standard errors, each of
  // 10 bins within 5 sigma of its expected count.
  constexpr int kDraws = 200000;
  double sum_f = 0, sum_d = 0, sq_d = 0;
  int bins[10] = {};
  for (int i = 0; i < kDraws; ++i) {
    const float f = PhiloxUniformFloat(42, 3, i, 0);
    const double d = PhiloxUniformDouble(42, 3, i, 0);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum_f += f;
    sum_d += d;
    sq_d += d * d;
    ++bins[static_cast<int>(d * 10)];
  }
  const double se_mean = std::sqrt(1.0 / 12 / kDraws);
  EXPECT_NEAR(sum_f / kDraws, 0.5, 5 * se_mean);
  EXPECT_NEAR(sum_d / kDraws, 0.5, 5 * se_mean);
  EXPECT_NEAR(sq_d / kDraws - 0.25, 1.0 / 12, 0.002);
  const double expected = kDraws / 10.0;
  for (int b : bins) EXPECT_NEAR(b, expected, 5 * std::sqrt(expected * 0.9));
}

TEST(SamplingPhilox, DrawSitesAreDistinct) {
  std::set<double> seen;
  for (uint64_t seed : {0ull, 1ull, 1ull << 32}) {
    for (int64_t index : {0, 1}) {
      for (int64_t pos : {0ll, 1ll, 1ll << 32}) {
        for (uint32_t lane : {0u, 1u, 2u}) seen.insert(PhiloxUniformDouble(seed, index, pos, lane));
      }
    }
  }
  EXPECT_EQ(seen.size(), 3u * 2 * 3 * 3);
  // The same site always gives the same number.
  EXPECT_EQ(PhiloxUniformDouble(7, 2, 99, 0), PhiloxUniformDouble(7, 2, 99, 0));
  EXPECT_EQ(PhiloxUniformFloat(7, 2, 99, 5), PhiloxUniformFloat(7, 2, 99, 5));
}

}  // namespace
}  // namespace deepinfer::engine
