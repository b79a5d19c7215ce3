#include "bf16_peak.h"

#include "core/machine_limits.h"

namespace deepinfer::bench {

// The peak loop lives in core/machine_limits.h (shared with `deepinfer bench`).
double Bf16PeakGflopsOnce(int64_t iters) { return PeakGflopsOnce(iters); }

double MeasureBf16PeakGflops() { return MeasurePeakGflops(); }

}  // namespace deepinfer::bench
