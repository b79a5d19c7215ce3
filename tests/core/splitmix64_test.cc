// SplitMix64 against the published first output of the generator seeded with 0, and MixSeed's
// contract: the chain of SplitMix64 steps it documents, and different members get different seeds.
#include "core/splitmix64.h"

#include <gtest/gtest.h>

#include <set>

namespace deepinfer {
namespace {

TEST(SplitMix64Test, FirstOutputFromZero) {
  EXPECT_EQ(SplitMix64(0), 0xE220A8397B1DCDAFull);  // Vigna's splitmix64.c, state 0
}

TEST(SplitMix64Test, MixSeedChainsOneStepPerValue) {
  EXPECT_EQ(MixSeed(5, {}), 5u);
  EXPECT_EQ(MixSeed(5, {7}), SplitMix64(5 ^ 7));
  EXPECT_EQ(MixSeed(5, {7, -1}), SplitMix64(SplitMix64(5 ^ 7) ^ ~uint64_t{0}));
  // Order and every value matter: the 4 x 4 x 4 members of a small family are all distinct, and
  // swapping two values gives another seed.
  std::set<uint64_t> seen;
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = -1; c < 3; ++c) seen.insert(MixSeed(1, {a, b, c}));
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_NE(MixSeed(1, {2, 3}), MixSeed(1, {3, 2}));
}

}  // namespace
}  // namespace deepinfer
