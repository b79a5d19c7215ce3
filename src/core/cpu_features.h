// Which x86-64 vector extensions this CPU (and OS) supports, probed once at start-up.
// Kernels pick their implementation from this at run time (kernels/cpu/dispatch.h).
#pragma once

#include <string>

namespace deepinfer {

enum class CpuLevel { kScalar, kAvx2, kAvx512 };  // kAvx512 = F+BW+VL+DQ+BF16+VBMI+VNNI

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512_core = false;  // F, BW, VL, DQ
  bool avx512_bf16 = false;
  bool avx512_vbmi = false;
  bool avx512_vnni = false;

  CpuLevel BestLevel() const;
};

const CpuFeatures& GetCpuFeatures();

// The level kernels use: the best the CPU has, capped by DEEPINFER_CPU_LEVEL=scalar|avx2|avx512
// (for testing the fallbacks on an AVX-512 machine).
CpuLevel ActiveCpuLevel();
const char* CpuLevelName(CpuLevel level);

}  // namespace deepinfer
