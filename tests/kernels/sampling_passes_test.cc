#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <bit>
#include "kernels/cpu/exp_f32.h"
#include "kernels/cpu/sampling_passes.h"

namespace deepinfer::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> RandomLogits(int64_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  for (int64_t i = 0; i < n; i += 7) x[i] = kNegInf;  // masked entries
  return x;
}

bool HasAvx512() { return GetCpuFeatures().BestLevel() == CpuLevel::kAvx512; }

// Every pass of the AVX-512 table equals the scalar one bit for bit, at lengths with and without
// a partial last vector.
TEST(SamplingKernels, Avx512MatchesScalarBitForBit) {
  if (!HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const SamplingKernels& s = GetSamplingKernels(CpuLevel::kScalar);
  const SamplingKernels& v = GetSamplingKernels(CpuLevel::kAvx512);
  for (int64_t n : {1, 15, 16, 17, 1000, 129280}) {
    const std::vector<float> x = RandomLogits(n, static_cast<uint32_t>(n), 3.0f);
    std::vector<uint32_t> bits((n + 31) / 32);
    std::mt19937 rng(1);
    for (auto& b : bits) b = rng();
    std::vector<float> a(n), b(n);
    s.masked_copy({x.data(), bits.data(), n, a.data()});
    v.masked_copy({x.data(), bits.data(), n, b.data()});
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << n << " " << i;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(a[i] == kNegInf, !((bits[i / 32] >> (i % 32)) & 1) || x[i] == kNegInf);
    }
    const MaxScanResult ma = s.scan_max(a.data(), n), mb = v.scan_max(a.data(), n);
    EXPECT_EQ(ma.max, mb.max);
    EXPECT_FALSE(ma.non_finite || mb.non_finite);
    EXPECT_EQ(s.first_index_of(a.data(), n, ma.max), v.first_index_of(a.data(), n, ma.max));
    ExpScanStats sa, sb;
    s.exp_scan({a.data(), n, ma.max, 1.3f, &sa});
    v.exp_scan({b.data(), n, mb.max, 1.3f, &sb});
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << n << " " << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(sa.sum), std::bit_cast<uint32_t>(sb.sum));
    for (int j = 0; j < kExpLevels; ++j) {
      EXPECT_EQ(std::bit_cast<uint32_t>(sa.level_mass[j]),
                std::bit_cast<uint32_t>(sb.level_mass[j]));
      EXPECT_EQ(sa.level_count[j], sb.level_count[j]);
    }
    std::vector<float> va(n + 16), vb(n + 16);
    std::vector<int32_t> ia(n + 16), ib(n + 16);
    const int64_t ca = s.compact_at_least({a.data(), n, 0x1p-8f, va.data(), ia.data()});
    const int64_t cb = v.compact_at_least({a.data(), n, 0x1p-8f, vb.data(), ib.data()});
    ASSERT_EQ(ca, cb);
    for (int64_t i = 0; i < ca; ++i) ASSERT_TRUE(va[i] == vb[i] && ia[i] == ib[i]);
  }
}

// Against a plain double-precision reference: the exp values, sums within 1e-5 relative, counts
// and compaction exact.
TEST(SamplingKernels, ExpScanMatchesReference) {
  for (CpuLevel level : {CpuLevel::kScalar, CpuLevel::kAvx512}) {
    if (level == CpuLevel::kAvx512 && !HasAvx512()) continue;
    const SamplingKernels& k = GetSamplingKernels(level);
    const int64_t n = 5003;
    std::vector<float> x = RandomLogits(n, 9, 4.0f);
    const float max = *std::max_element(x.begin(), x.end());
    EXPECT_EQ(k.scan_max(x.data(), n).max, max);
    std::vector<float> e = x;
    ExpScanStats stats;
    k.exp_scan({e.data(), n, max, 0.5f, &stats});
    double sum = 0, mass[kExpLevels] = {};
    int64_t count[kExpLevels] = {};
    for (int64_t i = 0; i < n; ++i) {
      const float arg = (x[i] - max) * 0.5f;  // rounded as the kernel rounds it
      const double ref = std::exp(static_cast<double>(arg));
      ASSERT_NEAR(e[i], ref, 3e-7 * ref + 1e-37) << i;
      sum += e[i];
      for (int j = 0; j < kExpLevels; ++j) {
        if (e[i] >= kLevelThreshold[j]) mass[j] += e[i], ++count[j];
      }
    }
    EXPECT_NEAR(stats.sum, sum, 1e-5 * sum);
    for (int j = 0; j < kExpLevels; ++j) {
      EXPECT_NEAR(stats.level_mass[j], mass[j], 1e-5 * sum);
      EXPECT_EQ(stats.level_count[j], count[j]);
    }
    const auto first_max = std::find(x.begin(), x.end(), max) - x.begin();
    EXPECT_EQ(k.first_index_of(x.data(), n, max), first_max);
    EXPECT_EQ(k.first_index_of(x.data(), n, 12345.0f), n);
    std::vector<float> vals(n + 16);
    std::vector<int32_t> ids(n + 16);
    const int64_t m = k.compact_at_least({e.data(), n, 0x1p-12f, vals.data(), ids.data()});
    EXPECT_EQ(m, count[2]);
    for (int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(vals[i], e[ids[i]]);
      if (i > 0) {
        EXPECT_LT(ids[i - 1], ids[i]);
      }
    }
  }
}

TEST(SamplingKernels, ScanMaxFlagsNanAndInfinity) {
  for (CpuLevel level : {CpuLevel::kScalar, CpuLevel::kAvx512}) {
    if (level == CpuLevel::kAvx512 && !HasAvx512()) continue;
    const SamplingKernels& k = GetSamplingKernels(level);
    std::vector<float> x(37, 1.0f);
    EXPECT_FALSE(k.scan_max(x.data(), 37).non_finite);
    x[36] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(k.scan_max(x.data(), 37).non_finite);
    x[36] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(k.scan_max(x.data(), 37).non_finite);
    x.assign(37, kNegInf);
    EXPECT_EQ(k.scan_max(x.data(), 37).max, kNegInf);
  }
}

}  // namespace
}  // namespace deepinfer::kernels
