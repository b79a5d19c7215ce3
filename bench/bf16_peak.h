// The compute peak the prefill benchmarks report against: `vdpbf16ps` with 24 independent
// accumulators on every thread of the default pool (2 flops per MAC, 32 MACs per instruction),
// best of three runs.
#pragma once

namespace deepinfer::bench {

double MeasureBf16PeakGflops();

}  // namespace deepinfer::bench
