// KV quantize-dequantize: FP8 per 32 (pow2 scale), FP4 per 16 (e4m3 scale), FP4 per 32 (pow2).
#include "kernels/cpu/kv_qdq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "kernels/cpu/act_quant.h"

namespace deepinfer::kernels {
namespace {

// Bf16 values over many binades (normal times log-normal), every third 32-block scaled by 1e-3.
std::vector<uint16_t> HeavyTailedBf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::lognormal_distribution<float> mag(0.0f, 3.0f);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = FloatToBf16(dist(rng) * mag(rng) * ((i / 32) % 3 ? 1 : 1e-3f));
  return v;
}

// Brute force: nearest e2m1 grid value (ties to the even code) of v in [-6, 6].
double NearestE2m1(double v) {
  static const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::fabs(v);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(a - grid[c]), db = std::fabs(a - grid[best]);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return std::copysign(grid[best], v);
}

TEST(KvQdqTest, Fp8MatchesActivationQuantizer) {
  auto x = HeavyTailedBf16(512 * 4, 1);
  std::vector<uint16_t> want(x.size());
  QuantizeActScaledBf16Ref(x.data(), x.size(), want.data());
  Fp8QdqBlock32(x.data(), x.size());
  EXPECT_EQ(x, want);
}

TEST(KvQdqTest, Pow2Scale) {
  EXPECT_EQ(Pow2Scale(6.0f, 1.0f / 6.0f), 1.0f);
  EXPECT_EQ(Pow2Scale(7.0f, 1.0f / 6.0f), 2.0f);
  EXPECT_EQ(Pow2Scale(448.0f, 1.0f / 448.0f), 1.0f);
  EXPECT_EQ(Pow2Scale(3.0f, 1.0f / 6.0f), 0.5f);
}

TEST(KvQdqTest, Fp4Pow2Block32AgainstBruteForce) {
  auto x = HeavyTailedBf16(128 * 8, 2);
  auto y = x;
  Fp4QdqPow2Block32(y.data(), y.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    double amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, double(std::fabs(Bf16ToFloat(x[b + i]))));
    amax = std::max(amax, 6.0 * std::ldexp(1.0, -126));
    const double s = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(amax / 6.0))));
    for (int i = 0; i < 32; ++i) {
      const double v = std::clamp(Bf16ToFloat(x[b + i]) / s, -6.0, 6.0);
      ASSERT_EQ(Bf16ToFloat(y[b + i]), static_cast<float>(NearestE2m1(v) * s)) << b + i;
    }
  }
}

TEST(KvQdqTest, Fp4E4m3Block16AgainstBruteForce) {
  auto x = HeavyTailedBf16(512 * 2, 3);
  auto y = x;
  Fp4QdqE4m3Block16(y.data(), y.size());
  for (size_t b = 0; b < x.size(); b += 16) {
    float amax = 0;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(Bf16ToFloat(x[b + i])));
    amax = std::max(amax, 6.0f * 0x1p-9f);
    const float s = E4m3ToFloat(FloatToE4m3(amax / 6.0f));
    for (int i = 0; i < 16; ++i) {
      const double v = std::clamp(double(Bf16ToFloat(x[b + i]) / s), -6.0, 6.0);
      ASSERT_EQ(Bf16ToFloat(y[b + i]), RoundToBf16(static_cast<float>(NearestE2m1(v)) * s))
          << b + i;
    }
  }
}

// The AVX-512 form against the scalar one, bit for bit: every bf16 code (NaN, inf, zeros,
// subnormals included) alone in its block (amax = |code|), and beside a block of random
// magnitudes (the code quantized at another block's scale, or setting it), plus blocks holding a
// NaN, an infinity or only zeros.
TEST(KvQdqTest, Fp4Pow2Block32Avx512MatchesScalar) {
  if (ActiveCpuLevel() != CpuLevel::kAvx512) GTEST_SKIP() << "no AVX-512";
  std::vector<uint16_t> x;
  const auto companions = HeavyTailedBf16(31 * 64, 5);
  for (uint32_t code = 0; code < 65536; ++code) {
    std::vector<uint16_t> alone(32, 0);
    alone[code % 32] = static_cast<uint16_t>(code);
    x.insert(x.end(), alone.begin(), alone.end());
    const uint16_t* c = companions.data() + (code % 64) * 31;
    for (int i = 0; i < 32; ++i) x.push_back(i == 7 ? static_cast<uint16_t>(code) : c[i - (i > 7)]);
  }
  for (uint16_t special : {uint16_t{0x7FC0}, uint16_t{0xFF81}, uint16_t{0x7F80}, uint16_t{0xFF80},
                           uint16_t{0x8000}, uint16_t{0x0001}}) {
    for (int i = 0; i < 32; ++i) x.push_back(i % 5 == 0 ? special : companions[i]);
  }
  x.insert(x.end(), 32, uint16_t{0x8000});
  auto want = x, got = x;
  Fp4QdqPow2Block32Ref(want.data(), static_cast<int64_t>(want.size()));
  Fp4QdqPow2Block32Avx512(got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "element " << i << " of block " << i / 32 << ", input 0x"
                               << std::hex << x[i];
  }
}

TEST(KvQdqTest, Fp4HandExamples) {
  // Block of 32 with amax 6: scale 1, values round to the e2m1 grid with ties to even.
  std::vector<uint16_t> x(32, FloatToBf16(0.0f));
  const float in[] = {6.0f, 0.75f, 1.25f, 2.5f, 3.5f, 5.0f, -0.25f, 1.75f};
  const float out[] = {6.0f, 1.0f, 1.0f, 2.0f, 4.0f, 4.0f, -0.0f, 2.0f};
  for (int i = 0; i < 8; ++i) x[i] = FloatToBf16(in[i]);
  Fp4QdqPow2Block32(x.data(), 32);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Bf16ToFloat(x[i]), out[i]) << in[i];
  // All-zero group of 16: the amax floor keeps the scale finite and the output zero.
  std::vector<uint16_t> z(16, 0);
  Fp4QdqE4m3Block16(z.data(), 16);
  for (uint16_t v : z) EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace deepinfer::kernels
