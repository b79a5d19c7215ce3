// Paired bandwidth measurement for memory-bound kernel benchmarks.
//
// Read bandwidth on the shared VMs swings between ~25 and ~70 GB/s with host load, so an absolute
// GB/s figure means little. Each timed kernel call is preceded by a plain AVX-512 read of an
// equal-sized slice of a separate random buffer (larger than L3, rotated so it never hits cache);
// the benchmark reports the median over calls of (kernel GB/s) / (paired read GB/s) as
// "pct_of_read". See docs/performance.md.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/machine_limits.h"

namespace deepinfer::bench {

class PairedReader {
 public:
  // bytes_per_call: the bytes the kernel streams per call; the buffer holds >= 256 MiB of slices.
  explicit PairedReader(size_t bytes_per_call);
  // Reads the next slice with all threads of the default pool; returns seconds taken.
  double ReadSlice() { return probe_.ReadSlice(); }

 private:
  ReadBandwidthProbe probe_;  // core/machine_limits.h: shared with `deepinfer bench`
};

// Times `kernel` with manual timing; before each call, reads a paired slice. Sets counters:
// GB/s of the kernel (bytes / time), read_GBps (the paired plain read), pct_of_read (median of
// per-call ratios, in percent).
template <typename Kernel>
void RunPaired(benchmark::State& state, PairedReader& reader, size_t bytes, Kernel&& kernel);

double NowSeconds();
void ReportPaired(benchmark::State& state, std::vector<double>& ratios, double bytes,
                  double total_kernel_s, double total_read_s, size_t n);

template <typename Kernel>
void RunPaired(benchmark::State& state, PairedReader& reader, size_t bytes, Kernel&& kernel) {
  std::vector<double> ratios;
  double kernel_total = 0.0, read_total = 0.0;
  for (auto _ : state) {
    const double t_read = reader.ReadSlice();
    const double t0 = NowSeconds();
    kernel();
    const double t_kernel = NowSeconds() - t0;
    state.SetIterationTime(t_kernel);
    ratios.push_back(t_read / t_kernel);
    kernel_total += t_kernel;
    read_total += t_read;
  }
  ReportPaired(state, ratios, static_cast<double>(bytes), kernel_total, read_total, ratios.size());
}

// Rotating copies of a weight set so that no call finds its weights in cache: `n_copies` copies of
// `bytes` each, n_copies chosen so the set exceeds BeyondCacheBytes() (core/machine_limits.h).
size_t CopiesToDefeatCache(size_t bytes);

}  // namespace deepinfer::bench
