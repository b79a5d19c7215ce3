// The physical limits benchmarks report against, measured on this machine in the same process:
// the plain read bandwidth of all pool threads and the peak of the widest multiply-add the
// kernels use (vdpbf16ps with AVX-512 BF16, else fp32 FMA). Both swing with host load on shared
// VMs, so callers pair each timed kernel or model call with a measurement taken right next to it
// (bench/paired_bandwidth.h, `deepinfer bench`) and report ratios.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/huge_pages.h"

namespace deepinfer {

class ThreadPool;

// Bytes a buffer must exceed for a stream through it to come from DRAM: 256 MiB, or four times the
// last-level cache where that is larger (an Intel Xeon guest reports a 300 MiB L3, which held
// much of a 256 MiB probe buffer and of a benchmark's 192 MiB of weight copies).
size_t BeyondCacheBytes();

// Reads equal-size slices of a random buffer larger than any cache, one slice per call, on every
// thread of `pool` (each thread reads a contiguous range), rotating through the slices so that no
// read finds its data in cache. Pseudo-random bytes, because zero pages read ~30% faster in these
// VMs.
class ReadBandwidthProbe {
 public:
  // bytes_per_read: the bytes one ReadSlice() streams (rounded up to 4 KiB); the buffer holds at
  // least min_buffer_bytes of slices (0: BeyondCacheBytes()), and at least two. pool null:
  // ThreadPool::Default().
  explicit ReadBandwidthProbe(size_t bytes_per_read, ThreadPool* pool = nullptr,
                              size_t min_buffer_bytes = 0);

  // Reads the next slice; returns the seconds it took.
  double ReadSlice();
  // Bytes per second of one ReadSlice().
  double ReadGbps() { return static_cast<double>(slice_bytes_) / ReadSlice() * 1e-9; }
  size_t slice_bytes() const { return slice_bytes_; }

 private:
  ThreadPool* pool_;
  size_t slice_bytes_;
  size_t n_slices_;
  size_t next_ = 0;
  // slice_bytes_ * n_slices_, on huge pages as the weights are (AllocateLarge).
  std::unique_ptr<uint8_t, FreeLarge> buffer_;
  std::vector<uint64_t> sink_;
};

// GFLOP/s (2 flops per multiply-add) of one timed run of the peak loop on every thread of `pool`
// (null: the default pool): `iters` iterations of 24 independent vdpbf16ps (32 MACs each) per
// thread with AVX-512 BF16, else 24 independent 8-lane fp32 FMAs (AVX2), else scalar fp32 FMAs.
// About 12 * iters ns per thread on a 2-core Zen 5 with BF16.
double PeakGflopsOnce(int64_t iters, ThreadPool* pool = nullptr);

// The best of `reps` runs of 2,000,000 iterations (a few tens of ms each).
double MeasurePeakGflops(ThreadPool* pool = nullptr, int reps = 3);

// Which loop PeakGflopsOnce runs on this CPU: "vdpbf16ps", "fma-f32x8" or "scalar-fma".
const char* PeakInstructionName();

// Seconds on a monotonic clock.
double MonotonicSeconds();

}  // namespace deepinfer
