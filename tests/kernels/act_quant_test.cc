// The vectorized activation quantizers (AVX2, AVX-512) against the scalar reference, bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/act_quant.h"

namespace deepinfer::kernels {
namespace {

using QuantizeFn = void (*)(const uint16_t*, int64_t, uint16_t*);

// The vectorized versions this CPU can run (AVX2, AVX-512), each checked on its own.
std::vector<std::pair<const char*, QuantizeFn>> VectorPaths() {
  std::vector<std::pair<const char*, QuantizeFn>> paths;
  const CpuLevel best = GetCpuFeatures().BestLevel();
  if (best >= CpuLevel::kAvx2) paths.emplace_back("avx2", QuantizeActScaledBf16Avx2);
  if (best >= CpuLevel::kAvx512) paths.emplace_back("avx512", QuantizeActScaledBf16Avx512);
  return paths;
}

void ExpectSameAsRef(const std::vector<uint16_t>& x) {
  if (VectorPaths().empty()) GTEST_SKIP() << "no AVX2 / AVX-512";
  std::vector<uint16_t> ref(x.size());
  QuantizeActScaledBf16Ref(x.data(), static_cast<int64_t>(x.size()), ref.data());
  for (const auto& [name, fn] : VectorPaths()) {
    std::vector<uint16_t> vec(x.size(), 0xDEAD);
    fn(x.data(), static_cast<int64_t>(x.size()), vec.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(ref[i], vec[i]) << name << ": element " << i << " x=0x" << std::hex << x[i]
                                << " block starts at " << std::dec << (i / 32 * 32);
    }
  }
}

bool IsFiniteBf16(uint16_t b) { return (b & 0x7F80u) != 0x7F80u; }

TEST(ActQuantTest, EveryFiniteBf16ValueInRandomBlocks) {
  // Each finite bf16 pattern appears once, in blocks whose other elements are random patterns
  // of a random binade width, so amax and the scale vary from tiny (subnormal x) to huge.
  std::mt19937 rng(7);
  std::vector<uint16_t> all;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if (IsFiniteBf16(static_cast<uint16_t>(b))) all.push_back(static_cast<uint16_t>(b));
  }
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<uint16_t> x;
  for (size_t i = 0; i < all.size(); ++i) {
    x.push_back(all[i]);
    if (x.size() % 32 == 0) continue;
    if (i + 1 == all.size()) {
      while (x.size() % 32 != 0) x.push_back(0);
    }
  }
  ExpectSameAsRef(x);
}

TEST(ActQuantTest, RealisticRowsAndTies) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-30, 20);
  std::vector<uint16_t> x(32 * 4096);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float scale = std::ldexp(1.0f, binade(rng));
    for (int i = 0; i < 32; ++i) x[b * 32 + i] = FloatToBf16(normal(rng) * scale);
    if (b % 7 == 0) x[b * 32 + 3] = FloatToBf16(448.0f * scale);  // amax exactly 448·2^e
    if (b % 11 == 0) {
      for (int i = 0; i < 32; ++i) x[b * 32 + i] = (i % 2) ? 0x8000 : 0;  // all ±0
    }
  }
  // Exact e4m3 ties: with amax = 448 the scale is 1, so x = 1.0625 (halfway between 1 and 1.125,
  // even code wins) and 2^-10 (halfway between 0 and 2^-9) must round to even.
  x[0] = FloatToBf16(448.0f);
  x[1] = FloatToBf16(1.0625f);
  x[2] = FloatToBf16(1.1875f);
  x[3] = FloatToBf16(0x1p-10f);
  x[4] = FloatToBf16(-0x1.8p-9f);
  x[5] = FloatToBf16(-0x1p-10f);
  ExpectSameAsRef(x);
  std::vector<uint16_t> ref(32);
  QuantizeActScaledBf16Ref(x.data(), 32, ref.data());
  EXPECT_EQ(Bf16ToFloat(ref[1]), 1.0f);
  EXPECT_EQ(Bf16ToFloat(ref[2]), 1.25f);
  EXPECT_EQ(Bf16ToFloat(ref[3]), 0.0f);
  EXPECT_EQ(Bf16ToFloat(ref[4]), -0x1p-8f);
  EXPECT_EQ(ref[5], 0x8000);  // -0
}

TEST(ActQuantTest, DispatchMatchesReference) {
  std::vector<uint16_t> x(64);
  for (int i = 0; i < 64; ++i) x[i] = FloatToBf16(static_cast<float>(i - 20) * 0.37f);
  std::vector<uint16_t> ref(64), got(64);
  QuantizeActScaledBf16Ref(x.data(), 64, ref.data());
  QuantizeActScaledBf16(x.data(), 64, got.data());
  EXPECT_EQ(ref, got);
}

}  // namespace
}  // namespace deepinfer::kernels
