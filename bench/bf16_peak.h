// The compute peak the prefill benchmarks report against: `vdpbf16ps` with 24 independent
// accumulators on every thread of the default pool (2 flops per MAC, 32 MACs per instruction),
// best of three runs.
#pragma once

#include <cstdint>

namespace deepinfer::bench {

double MeasureBf16PeakGflops();

// One timed run of the same loop (iters x 24 instructions per thread), for pairing each timed
// kernel call with a peak measurement taken right after it (robust to host load).
double Bf16PeakGflopsOnce(int64_t iters);

}  // namespace deepinfer::bench
