// The read-bandwidth probe (core/machine_limits.h).
#include "core/machine_limits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/thread_pool.h"

namespace deepinfer {
namespace {

// Resident bytes of this process (/proc/self/statm, second field, in pages).
double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4096.0;
}

TEST(ReadBandwidthProbe, RoundsSlicesToPagesAndReadsEachAtAFiniteRate) {
  ThreadPool pool(2);
  ReadBandwidthProbe probe(5000, &pool, size_t{1} << 20);
  EXPECT_EQ(probe.slice_bytes(), 8192u);
  for (int i = 0; i < 300; ++i) {  // more reads than slices: the rotation wraps
    const double gbps = probe.ReadGbps();
    ASSERT_TRUE(std::isfinite(gbps));
    ASSERT_GT(gbps, 0.0);
  }
}

TEST(ReadBandwidthProbe, WritesEveryPageOfItsBuffer) {
  // A page never written reads as the shared zero page, which these VMs serve ~30% faster than
  // memory: the whole buffer must be resident once the probe exists.
  ThreadPool pool(2);
  const size_t bytes = size_t{64} << 20;
  const double before = ResidentBytes();
  ReadBandwidthProbe probe(bytes / 2, &pool, bytes);
  const double grown = ResidentBytes() - before;
  EXPECT_GE(grown, 0.95 * static_cast<double>(bytes)) << "resident growth " << grown;
  EXPECT_GT(probe.ReadGbps(), 0.0);
}

}  // namespace
}  // namespace deepinfer
