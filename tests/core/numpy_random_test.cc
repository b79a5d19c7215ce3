// numpy_random against numpy itself: every expected value below was printed by Debian's numpy
// 1.24.2 (python3-numpy 1:1.24.2-1+deb12u1) and pasted here as a constant, e.g.
//   SeedSequence(10007).pool, SeedSequence(10007).generate_state(4, np.uint64),
//   PCG64(0).random_raw(5), default_rng(7).integers(0, 100, 9, dtype=np.int64).
// Exact equality throughout: these feed model constants.
#include "core/numpy_random.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace deepinfer {
namespace {

constexpr int64_t kInt64Max = INT64_MAX;

TEST(SeedSequence, PoolAndStateMatchNumpy) {
  struct Case {
    uint64_t seed;
    std::array<uint32_t, 4> pool;
    std::vector<uint64_t> state64;
    std::vector<uint32_t> state32;
  };
  const std::vector<Case> cases = {
      {0,
       {0xfe40eb07, 0x4f363a36, 0x4eb2009d, 0xc89a7aa7},
       {0xdb2cd7e7b0f478be, 0xabf4641a2c71ba49, 0x20c6ed6d9d7b8d41, 0x2c4099de223c39d4},
       {0xb0f478be, 0xdb2cd7e7, 0x2c71ba49, 0xabf4641a, 0x9d7b8d41}},
      {10007,
       {0xf1a1018d, 0xa7c60c02, 0xfd15d50a, 0x03b81232},
       {0x77d32a348ad70d07, 0x993ed609b84a4fa5, 0xd5f972dec8698e49, 0x7d79ebaebcf148de},
       {0x8ad70d07, 0x77d32a34, 0xb84a4fa5, 0x993ed609, 0xc8698e49}},
      {140098,
       {0x7097f09f, 0xc71373b7, 0x148492af, 0x9681c6c4},
       {0xdb5869feeeccf2be, 0xad465727d9cf3645, 0x5155d26378b6bab4, 0x9f9e49df66ff1c85},
       {0xeeccf2be, 0xdb5869fe, 0xd9cf3645, 0xad465727, 0x78b6bab4}},
  };
  for (const Case& c : cases) {
    SeedSequence ss(c.seed);
    EXPECT_EQ(ss.pool(), c.pool) << "seed " << c.seed;
    EXPECT_EQ(ss.GenerateState64(4), c.state64) << "seed " << c.seed;
    EXPECT_EQ(ss.GenerateState32(5), c.state32) << "seed " << c.seed;
  }
}

TEST(SeedSequence, MultiWordEntropyMatchesNumpy) {
  // SeedSequence(2**70 + 5): words [5, 0, 64]; fewer words than the pool, still three.
  const std::array<uint32_t, 3> words = {5, 0, 64};
  SeedSequence ss(words);
  EXPECT_EQ(ss.pool(), (std::array<uint32_t, 4>{0xbe86e862, 0x0517c3ca, 0xec88939e, 0x629eb5c7}));
  EXPECT_EQ(ss.GenerateState64(4), (std::vector<uint64_t>{0x0a14346bef71fe56, 0x6c60906e9c13de68,
                                                          0x9b12832d9c9d1cba, 0x7c8fcd316a15af4e}));
  // Zero: numpy splits 0 into [0]; the empty span is the same entropy.
  EXPECT_EQ(SeedSequence(std::span<const uint32_t>()).pool(), SeedSequence(uint64_t{0}).pool());
}

TEST(SeedSequence, EntropyBeyondThePoolIsMixedIn) {
  // Words past the pool size go through the second mixing loop: they must change the pool.
  const std::array<uint32_t, 5> a = {1, 2, 3, 4, 5};
  const std::array<uint32_t, 5> b = {1, 2, 3, 4, 6};
  EXPECT_NE(SeedSequence(a).pool(), SeedSequence(b).pool());
}

TEST(Pcg64, RawOutputMatchesNumpy) {
  Pcg64 g0{SeedSequence(uint64_t{0})};
  const std::vector<uint64_t> want0 = {0xa30febcfd9c2825f, 0x4510bdf882d9d721, 0x0a7d3da94ecde8b8,
                                       0x043b27b61342f01d, 0xd0327a782cde513b};
  for (uint64_t w : want0) EXPECT_EQ(g0.NextUint64(), w);
  Pcg64 g1{SeedSequence(uint64_t{10007})};
  const std::vector<uint64_t> want1 = {0xd2c3f84026661e33, 0x0d4fb6969eb57435, 0x62e6e1c58c3bd72b,
                                       0xcb7dd1a94ca96343, 0x6de577284ec99078};
  for (uint64_t w : want1) EXPECT_EQ(g1.NextUint64(), w);
}

TEST(Pcg64, Uint32DrawsAreHalvesLowFirst) {
  Pcg64 a{SeedSequence(uint64_t{0})};
  EXPECT_EQ(a.NextUint32(), 0xd9c2825fu);
  EXPECT_EQ(a.NextUint32(), 0xa30febcfu);
  EXPECT_EQ(a.NextUint32(), 0x82d9d721u);
  // A 64-bit draw leaves a buffered half in place.
  EXPECT_EQ(a.NextUint64(), 0x0a7d3da94ecde8b8u);
  EXPECT_EQ(a.NextUint32(), 0x4510bdf8u);
}

TEST(NumpyGenerator, IntegersMatchNumpy) {
  struct Case {
    uint64_t seed;
    int64_t low, high;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      // Engram multiplier draws: fixture (compressed vocab 256) and release (99092) bounds.
      {0,
       0,
       (kInt64Max / 256) / 2,
       {11474481670680735, 4860045374305909, 738113388524410, 297735412830396}},
      {10007,
       0,
       (kInt64Max / 256) / 2,
       {14831304026200454, 936705081716060, 6959601268494069, 14319439928568408}},
      {10007,
       0,
       (kInt64Max / 99092) / 2,
       {38316048023122, 2419938046656, 17979836159674, 36993668729195}},
      {140098,
       0,
       (kInt64Max / 99092) / 2,
       {33858405369630, 25755403400457, 15460673601360, 41309613242795}},
      // 32-bit Lemire path (range < 2^32), with a negative low.
      {7, 0, 100, {94, 62, 68, 89, 57, 77, 83, 22, 5}},
      {7, -5, 17, {15, 8, 10, 14, 7, 12, 13}},
      {9, 0, 3, {1, 2, 2, 0, 0, 1, 2, 2, 1, 2, 2, 2}},
      // range exactly 2^32 - 1: raw 32-bit draws; one more: 64-bit Lemire.
      {7, 0, int64_t{1} << 32, {4058335883, 2684764585, 2938530453, 3853503932, 2483747170}},
      {7, 0, (int64_t{1} << 32) + 1, {2684764586, 3853503933, 3331544672, 967257516, 1289204377}},
      {7,
       0,
       kInt64Max,
       {5765488047046174020, 8275336682942969161, 7154437704795913392, 2077169698657866656,
        2768545318656780450}},
      {11,
       INT64_MIN,
       kInt64Max,
       {-6851670410866406323, -13321086753211802, 1872314226979923067, -8694153241689003054}},
      // empty range: always low
      {7, 3, 4, {3, 3, 3}},
  };
  for (const Case& c : cases) {
    NumpyGenerator g(c.seed);
    EXPECT_EQ(g.Integers(c.low, c.high, c.want.size()), c.want)
        << "seed " << c.seed << " [" << c.low << ", " << c.high << ")";
  }
}

TEST(NumpyGenerator, SuccessiveCallsShareTheBufferedHalf) {
  // g = default_rng(123); g.integers(0,100,3); g.integers(0,2**40,2); g.integers(0,1000,3);
  // g.integers(0,10): the 32-bit half left over by the first call is used by the third.
  NumpyGenerator g(123);
  EXPECT_EQ(g.Integers(0, 100, 3), (std::vector<int64_t>{1, 68, 59}));
  EXPECT_EQ(g.Integers(0, int64_t{1} << 40, 2), (std::vector<int64_t>{242288242408, 202718949697}));
  EXPECT_EQ(g.Integers(0, 1000, 3), (std::vector<int64_t>{53, 333, 175}));
  EXPECT_EQ(g.Integers(0, 10, 1), (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace deepinfer
