// Helpers shared by the kernel tests that compare every CPU level with a scalar reference.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

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

}  // namespace deepinfer::kernels::test_util
