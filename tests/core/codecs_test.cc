// Exhaustive tests of the number codecs against independent brute-force references.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/ue8m0.h"

namespace deepinfer {
namespace {

// Independent e4m3 decode: value = (-1)^s * (e ? (1 + m/8) * 2^(e-7) : m/8 * 2^-6).
double E4m3Reference(uint8_t code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  const double v = e ? std::ldexp(1.0 + m / 8.0, e - 7) : std::ldexp(m / 8.0, -6);
  return s ? -v : v;
}

// Brute-force saturating RNE encoder: nearest finite e4m3 magnitude, ties to the even code.
uint8_t E4m3EncodeBruteForce(double x) {
  const bool neg = std::signbit(x);
  const double a = std::min(std::fabs(x), 448.0);
  int best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (int c = 0; c <= 0x7E; ++c) {
    const double err = std::fabs(E4m3Reference(static_cast<uint8_t>(c)) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best | (neg ? 0x80 : 0));
}

TEST(Bf16, DecodeEncodeEveryCode) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(c));
    EXPECT_EQ(std::bit_cast<uint32_t>(f), c << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f))));
    } else {
      EXPECT_EQ(FloatToBf16(f), c) << c;
    }
  }
}

TEST(Bf16, RoundsToNearestEvenBetweenEveryPairOfCodes) {
  // For every finite positive/negative code, the exact midpoint to the next code and the values
  // one fp32 ulp either side of it.
  for (uint32_t c = 0; c < 65535; ++c) {
    if ((c & 0x7FFF) >= 0x7F80) continue;  // inf / NaN region
    const uint32_t lo = c << 16;
    const uint32_t mid = lo + 0x8000;
    const uint16_t even = (c & 1) ? static_cast<uint16_t>(c + 1) : static_cast<uint16_t>(c);
    EXPECT_EQ(FloatToBf16(std::bit_cast<float>(mid)), even) << c;
    EXPECT_EQ(FloatToBf16(std::bit_cast<float>(mid - 1)), c) << c;
    EXPECT_EQ(FloatToBf16(std::bit_cast<float>(mid + 1)), c + 1) << c;
  }
}

TEST(Bf16, NanStaysNanAndInfStaysInf) {
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::bit_cast<float>(0x7F800001u)))));
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf (RNE)
}

TEST(E4m3, DecodeEveryCode) {
  int n_nan = 0;
  for (int c = 0; c < 256; ++c) {
    const float f = E4m3ToFloat(static_cast<uint8_t>(c));
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(f));
      ++n_nan;
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), E4m3Reference(static_cast<uint8_t>(c))) << c;
    EXPECT_EQ(std::signbit(f), c >= 128) << c;
    EXPECT_EQ(FloatToE4m3(f), c) << "round trip of code " << c;
  }
  EXPECT_EQ(n_nan, 2);
  EXPECT_EQ(E4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(E4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(E4m3ToFloat(0x08), 0x1p-6f);
}

TEST(E4m3, EncodeEveryBf16ValueMatchesBruteForce) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(c));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToE4m3(f), E4m3EncodeBruteForce(f)) << "bf16 code " << c << " value " << f;
  }
}

TEST(E4m3, EncodeMidpointsAndNeighboursMatchBruteForce) {
  for (int c = 0; c < 0x7E; ++c) {
    const float a = E4m3ToFloat(static_cast<uint8_t>(c));
    const float b = E4m3ToFloat(static_cast<uint8_t>(c + 1));
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // exact in fp32
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1000.0f)}) {
      EXPECT_EQ(FloatToE4m3(x), E4m3EncodeBruteForce(x)) << x;
      EXPECT_EQ(FloatToE4m3(-x), E4m3EncodeBruteForce(-x)) << -x;
    }
  }
}

TEST(E4m3, EncodeRandomFloatsMatchBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-14.0f, 10.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(exponent(rng)) * ((rng() & 1) ? 1.0f : -1.0f);
    ASSERT_EQ(FloatToE4m3(x), E4m3EncodeBruteForce(x)) << x;
  }
}

TEST(E4m3, SaturatesAndKeepsNan) {
  EXPECT_EQ(FloatToE4m3(448.0f), 0x7E);
  EXPECT_EQ(FloatToE4m3(463.99f), 0x7E);
  EXPECT_EQ(FloatToE4m3(464.0f), 0x7E);  // would round to 480 without saturation
  EXPECT_EQ(FloatToE4m3(1e30f), 0x7E);
  EXPECT_EQ(FloatToE4m3(-1e30f), 0xFE);
  EXPECT_EQ(FloatToE4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(FloatToE4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(FloatToE4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7F, 0x7F);
  EXPECT_EQ(FloatToE4m3(-0.0f), 0x80);
  EXPECT_EQ(FloatToE4m3(0x1p-11f), 0x00);  // a quarter of the smallest subnormal: rounds to 0
  EXPECT_EQ(FloatToE4m3(0x1p-10f), 0x00);  // exactly half: ties to even (0)
  EXPECT_EQ(FloatToE4m3(0x3p-10f), 0x02);  // 1.5 subnormal steps: ties to even (2)
}

TEST(Ue8m0, DecodeEveryCode) {
  for (int c = 0; c < 255; ++c) {
    const float f = Ue8m0ToFloat(static_cast<uint8_t>(c));
    EXPECT_EQ(static_cast<double>(f), std::ldexp(1.0, c - 127)) << c;
    EXPECT_EQ(FloatToUe8m0(f), c) << c;
  }
  EXPECT_TRUE(std::isnan(Ue8m0ToFloat(0xFF)));
}

TEST(Ue8m0, EncodeRoundsUpToPowerOfTwo) {
  EXPECT_EQ(FloatToUe8m0(1.0f), 127);
  EXPECT_EQ(FloatToUe8m0(std::nextafter(1.0f, 2.0f)), 128);
  EXPECT_EQ(FloatToUe8m0(1.5f), 128);
  EXPECT_EQ(FloatToUe8m0(std::nextafter(1.0f, 0.0f)), 127);
  EXPECT_EQ(FloatToUe8m0(0.75f), 127);
  EXPECT_EQ(FloatToUe8m0(0.0f), 0);
  EXPECT_EQ(FloatToUe8m0(0x1p-130f), 0);
  EXPECT_EQ(FloatToUe8m0(0x1.8p-127f), 1);
  EXPECT_EQ(FloatToUe8m0(std::numeric_limits<float>::max()), 254);
  EXPECT_EQ(FloatToUe8m0(-1.0f), 0xFF);
  EXPECT_EQ(FloatToUe8m0(std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(FloatToUe8m0(std::numeric_limits<float>::infinity()), 0xFF);
  // Matches 2^ceil(log2 x) for a sweep of normal values.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> e(-120.0f, 120.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::exp2(e(rng));
    const int expect = static_cast<int>(std::ceil(std::log2(static_cast<double>(x)))) + 127;
    ASSERT_EQ(FloatToUe8m0(x), expect) << x;
  }
}

TEST(ExactPow2, CoversNormalRange) {
  for (int e = -126; e <= 127; ++e)
    EXPECT_EQ(static_cast<double>(ExactPow2(e)), std::ldexp(1.0, e));
}

// Brute-force e2m1 encoder: nearest of the 8 magnitudes after clamping to 6, ties to even code.
uint8_t E2m1EncodeBruteForce(float x) {
  const float a = std::min(std::fabs(x), 6.0f);
  int best = 0;
  float best_err = std::numeric_limits<float>::infinity();
  for (int c = 0; c < 8; ++c) {
    const float err = std::fabs(kE2m1Values[c] - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 8 : 0));
}

TEST(E2m1, DecodeEveryCodeAndRoundTrip) {
  const float expected[16] = {0,     0.5f,  1,  1.5f,  2,  3,  4,  6,
                              -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    const float f = E2m1ToFloat(static_cast<uint8_t>(c));
    EXPECT_EQ(f, expected[c]) << c;
    EXPECT_EQ(std::signbit(f), c >= 8) << c;
    EXPECT_EQ(FloatToE2m1(f), c) << c;
  }
}

TEST(E2m1, TiesGoToEvenCode) {
  EXPECT_EQ(FloatToE2m1(0.25f), 0);
  EXPECT_EQ(FloatToE2m1(0.75f), 2);
  EXPECT_EQ(FloatToE2m1(1.25f), 2);
  EXPECT_EQ(FloatToE2m1(1.75f), 4);
  EXPECT_EQ(FloatToE2m1(2.5f), 4);
  EXPECT_EQ(FloatToE2m1(3.5f), 6);
  EXPECT_EQ(FloatToE2m1(5.0f), 6);
  EXPECT_EQ(FloatToE2m1(100.0f), 7);
  EXPECT_EQ(FloatToE2m1(-5.0f), 14);
}

TEST(E2m1, EncodeEveryBf16ValueMatchesBruteForce) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(c));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToE2m1(f), E2m1EncodeBruteForce(f)) << f;
  }
}

TEST(E2m1, PacksLowNibbleFirst) {
  EXPECT_EQ(PackE2m1Pair(0x3, 0xA), 0xA3);
  EXPECT_EQ(PackE2m1Pair(0x1F, 0x0), 0x0F);
}

}  // namespace
}  // namespace deepinfer
