#include "kernels/cpu/swiglu.h"

#include <algorithm>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

float SwiGluElement(float g, float u, float limit, const float* weight) {
  if (limit > 0.0f) {
    u = std::clamp(u, -limit, limit);
    g = std::min(g, limit);
  }
  const float silu = g / (1.0f + ExpF32(-g));
  float h = silu * u;
  if (weight != nullptr) h = *weight * h;
  return h;
}

void SwiGluRef(const SwiGluParams& p) {
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* g = p.gate + r * p.gate_stride;
    const uint16_t* u = p.up + r * p.up_stride;
    uint16_t* o = p.out + r * p.out_stride;
    const float* w = p.row_weight ? p.row_weight + r : nullptr;
    for (int64_t i = 0; i < p.n; ++i) {
      o[i] = FloatToBf16(SwiGluElement(Bf16ToFloat(g[i]), Bf16ToFloat(u[i]), p.limit, w));
    }
  }
}

}  // namespace deepinfer::kernels

namespace deepinfer::kernels {

void SwiGlu(const SwiGluParams& p) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    SwiGluAvx512(p);
  } else if (ActiveCpuLevel() == CpuLevel::kAvx2) {
    SwiGluAvx2(p);
  } else {
    SwiGluRef(p);
  }
}

}  // namespace deepinfer::kernels
