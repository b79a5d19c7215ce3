#include "kernels/cpu/sampling_passes.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {
namespace sampling_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void MaskedCopyScalar(const MaskedCopyParams& p) {
  const float* src = p.src;
  const uint32_t* allowed_bits = p.allowed_bits;
  const int64_t n = p.n;
  float* dst = p.dst;
  if (allowed_bits == nullptr) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = (allowed_bits[i >> 5] >> (i & 31)) & 1u ? src[i] : kNegInf;
  }
}

MaxScanResult ScanMaxScalar(const float* x, int64_t n) {
  MaxScanResult r{kNegInf, false};
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == std::numeric_limits<float>::infinity()) r.non_finite = true;
    if (x[i] > r.max) r.max = x[i];
  }
  return r;
}

int64_t FirstIndexOfScalar(const float* x, int64_t n, float value) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == value) return i;
  }
  return n;
}

// Lane l accumulates the elements i with i % 16 == l, in index order, exactly as the 16-lane
// vector accumulators do.
void ExpScanScalar(const ExpScanParams& p) {
  float* x = p.x;
  const int64_t n = p.n;
  float sum[16] = {};
  float mass[kExpLevels][16] = {};
  int64_t count[kExpLevels] = {};
  float threshold[kExpLevels];
  for (int j = 0; j < kExpLevels; ++j) threshold[j] = kLevelThreshold[j];
  for (int64_t i = 0; i < n; ++i) {
    const float e = kernels::ExpF32((x[i] - p.shift) * p.scale);
    x[i] = e;
    const int lane = static_cast<int>(i & 15);
    sum[lane] += e;
    for (int j = 0; j < kExpLevels; ++j) {
      if (e >= threshold[j]) {
        mass[j][lane] += e;
        ++count[j];
      }
    }
  }
  p.stats->sum = ReduceLanes(sum);
  for (int j = 0; j < kExpLevels; ++j) {
    p.stats->level_mass[j] = ReduceLanes(mass[j]);
    p.stats->level_count[j] = count[j];
  }
}

int64_t CompactAtLeastScalar(const CompactParams& p) {
  const float* e = p.e;
  const int64_t n = p.n;
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (e[i] >= p.threshold) {
      p.vals[m] = e[i];
      p.ids[m] = static_cast<int32_t>(i);
      ++m;
    }
  }
  return m;
}

}  // namespace

float ReduceLanes(float lanes[16]) {
  for (int w = 8; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  }
  return lanes[0];
}

const SamplingKernels kScalarSamplingKernels = {MaskedCopyScalar, ScanMaxScalar, FirstIndexOfScalar,
                                                ExpScanScalar, CompactAtLeastScalar};

}  // namespace sampling_internal

const SamplingKernels& GetSamplingKernels(CpuLevel level) {
  if (level == CpuLevel::kAvx512) {
    CHECK(GetCpuFeatures().BestLevel() == CpuLevel::kAvx512) << "this CPU lacks AVX-512";
    return sampling_internal::kAvx512SamplingKernels;
  }
  return sampling_internal::kScalarSamplingKernels;
}

}  // namespace deepinfer::kernels
