// The per-row passes over a vocabulary-sized logit vector that the sampler is built from.
//
// Each pass has a scalar version and an AVX-512 twin that returns bit-identical results (the same
// IEEE operations per element, the same 16-lane accumulation and the same final reduction
// tree), so a token never depends on which CPU level ran it; tests/kernels/sampling_passes_test.cc
// checks this. All passes are single-threaded: the sampler parallelizes over rows, never inside
// one.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace deepinfer::kernels {

// ExpScan also reports mass and count above these thresholds of e = exp((x - shift) * scale):
// level j keeps e >= 2^(-4 (j + 1)), i.e. 2^-4, 2^-8, ..., 2^-20. The sampler uses them to pick a
// small candidate set that provably holds every token it may keep.
inline constexpr int kExpLevels = 5;
// A table rather than a function: an out-of-line copy compiled with AVX-512 flags must not be
// shared with baseline code (scripts/check-isa-leaks.sh).
inline constexpr float kLevelThreshold[kExpLevels] = {0x1p-4f, 0x1p-8f, 0x1p-12f, 0x1p-16f,
                                                      0x1p-20f};

struct ExpScanStats {
  float sum = 0.0f;                   // sum of all e
  float level_mass[kExpLevels] = {};  // sum of e over e >= kLevelThreshold[j]
  int64_t level_count[kExpLevels] = {};
};

struct MaxScanResult {
  float max = 0.0f;         // -inf when n == 0 or every element is -inf
  bool non_finite = false;  // some element is NaN or +inf
};

// dst[i] = allowed(i) ? src[i] : -inf, where allowed(i) = bit (i % 32) of allowed_bits[i / 32];
// allowed_bits == nullptr allows every token.
struct MaskedCopyParams {
  const float* src = nullptr;  // [n]
  const uint32_t* allowed_bits = nullptr;
  int64_t n = 0;
  float* dst = nullptr;  // [n]
};

// In place: x[i] = ExpF32((x[i] - shift) * scale) (kernels/cpu/exp_f32.h; -inf gives 0), with
// the sums and counts of ExpScanStats.
struct ExpScanParams {
  float* x = nullptr;  // [n]
  int64_t n = 0;
  float shift = 0.0f;
  float scale = 1.0f;
  ExpScanStats* stats = nullptr;
};

// Writes the (value, index) of every e[i] >= threshold, in index order; returns how many.
struct CompactParams {
  const float* e = nullptr;  // [n]
  int64_t n = 0;
  float threshold = 0.0f;
  float* vals = nullptr;   // room for n + 16 entries (the vector version stores whole registers)
  int32_t* ids = nullptr;  // likewise
};

struct SamplingKernels {
  void (*masked_copy)(const MaskedCopyParams& p);
  MaxScanResult (*scan_max)(const float* x, int64_t n);
  // The first i with x[i] == value, or n.
  int64_t (*first_index_of)(const float* x, int64_t n, float value);
  void (*exp_scan)(const ExpScanParams& p);
  int64_t (*compact_at_least)(const CompactParams& p);
};

// The kernels of `level` (kAvx2 gets the scalar ones). CHECKs that the CPU supports it.
const SamplingKernels& GetSamplingKernels(CpuLevel level);

namespace sampling_internal {
// Sums 16 lane partials in the fixed tree both versions share (lanes [i] += [i + w], w = 8..1).
float ReduceLanes(float lanes[16]);
extern const SamplingKernels kScalarSamplingKernels;
extern const SamplingKernels kAvx512SamplingKernels;
}  // namespace sampling_internal

}  // namespace deepinfer::kernels
