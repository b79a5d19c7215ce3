// The CPU probe and the per-CPU choices made from it (core/cpu_features.h).
#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <cpuid.h>

#include <cstring>

namespace deepinfer {
namespace {

TEST(CpuFeatures, VendorIsTheCpuidVendorString) {
  unsigned a, b, c, d;
  ASSERT_TRUE(__get_cpuid(0, &a, &b, &c, &d));
  char name[13] = {};
  std::memcpy(name, &b, 4);
  std::memcpy(name + 4, &d, 4);
  std::memcpy(name + 8, &c, 4);
  const CpuVendor expected = std::strcmp(name, "GenuineIntel") == 0   ? CpuVendor::kIntel
                             : std::strcmp(name, "AuthenticAMD") == 0 ? CpuVendor::kAmd
                                                                      : CpuVendor::kOther;
  EXPECT_EQ(GetCpuFeatures().vendor, expected) << name;
}

TEST(CpuFeatures, StreamPrefetchBurstsOnAmdAndSpreadsElsewhere) {
  EXPECT_EQ(ChooseStreamPrefetch(nullptr, CpuVendor::kAmd), StreamPrefetch::kBurst);
  EXPECT_EQ(ChooseStreamPrefetch(nullptr, CpuVendor::kIntel), StreamPrefetch::kSpread);
  EXPECT_EQ(ChooseStreamPrefetch(nullptr, CpuVendor::kOther), StreamPrefetch::kSpread);
}

TEST(CpuFeatures, StreamPrefetchEnvironmentOverridesTheVendor) {
  EXPECT_EQ(ChooseStreamPrefetch("spread", CpuVendor::kAmd), StreamPrefetch::kSpread);
  EXPECT_EQ(ChooseStreamPrefetch("burst", CpuVendor::kIntel), StreamPrefetch::kBurst);
  // Anything else is no choice: the vendor's rule stands.
  EXPECT_EQ(ChooseStreamPrefetch("", CpuVendor::kAmd), StreamPrefetch::kBurst);
  EXPECT_EQ(ChooseStreamPrefetch("on", CpuVendor::kIntel), StreamPrefetch::kSpread);
  EXPECT_STREQ(StreamPrefetchName(StreamPrefetch::kBurst), "burst");
  EXPECT_STREQ(StreamPrefetchName(StreamPrefetch::kSpread), "spread");
}

}  // namespace
}  // namespace deepinfer
