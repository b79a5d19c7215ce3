#include "paired_bandwidth.h"

#include <algorithm>

namespace deepinfer::bench {

double NowSeconds() { return MonotonicSeconds(); }

// The read loop, its random buffer and rotation live in core/machine_limits.h.
PairedReader::PairedReader(size_t bytes_per_call) : probe_(bytes_per_call) {}

void ReportPaired(benchmark::State& state, std::vector<double>& ratios, double bytes,
                  double total_kernel_s, double total_read_s, size_t n) {
  if (ratios.empty()) return;
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  state.counters["GBps"] = bytes * static_cast<double>(n) / total_kernel_s * 1e-9;
  state.counters["read_GBps"] = bytes * static_cast<double>(n) / total_read_s * 1e-9;
  state.counters["pct_of_read"] = 100.0 * median;
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(n)));
}

size_t CopiesToDefeatCache(size_t bytes) {
  return std::max<size_t>(2, BeyondCacheBytes() / std::max<size_t>(bytes, 1) + 1);
}

}  // namespace deepinfer::bench
