// Helpers shared by the kernel tests (CPU levels to compare, output bits, random bf16 data).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/dtype.h"

namespace deepinfer::kernels::test_util {

// Scalar always, then AVX2 and AVX-512 when this CPU has them (each tested directly, whatever
// DEEPINFER_CPU_LEVEL says).
inline std::vector<CpuLevel> AvailableLevels() {
  std::vector<CpuLevel> levels{CpuLevel::kScalar};
  const CpuLevel best = GetCpuFeatures().BestLevel();
  if (best >= CpuLevel::kAvx2) levels.push_back(CpuLevel::kAvx2);
  if (best >= CpuLevel::kAvx512) levels.push_back(CpuLevel::kAvx512);
  return levels;
}

// Whether this CPU runs the AVX2 / AVX-512 kernels (a test of a vector path skips without it).
inline bool HaveAvx2() { return GetCpuFeatures().BestLevel() >= CpuLevel::kAvx2; }
inline bool HaveAvx512() { return GetCpuFeatures().BestLevel() >= CpuLevel::kAvx512; }

// The raw bits of an fp32 or bf16 output buffer, one uint32 per element, for bitwise comparison.
inline std::vector<uint32_t> OutputBits(const std::vector<uint8_t>& buf, DType dt) {
  std::vector<uint32_t> bits;
  const size_t es = dt == DType::kF32 ? 4 : 2;
  for (size_t i = 0; i + es <= buf.size(); i += es) {
    uint32_t v = 0;
    std::memcpy(&v, buf.data() + i, es);
    bits.push_back(v);
  }
  return bits;
}

// n bf16 values drawn from N(0, stddev^2) with a fixed seed.
inline std::vector<uint16_t> RandomBf16(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = FloatToBf16(dist(rng));
  return v;
}

}  // namespace deepinfer::kernels::test_util
