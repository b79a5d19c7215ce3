// SwiGLU with the V4.1 clamps, the elementwise step between an expert's w1/w3 and w2:
//   g = min(gate, limit)                   (gate branch clamped from above only)
//   u = clamp(up, -limit, limit)           (up branch clamped on both sides)
//   h = silu(g) * u, silu(g) = g / (1 + exp(-g))      (torch's fp32 silu form; ExpF32)
//   h = weight * h                         (optional per-row routing weight, fp32)
//   out = bf16(h)
// All fp32; gate/up are the bf16 GEMM outputs. limit <= 0 disables both clamps (the reference's
// `if swiglu_limit > 0`).
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

struct SwiGluParams {
  const uint16_t* gate = nullptr;  // [n_rows][gate_stride] bf16 (w1 output)
  const uint16_t* up = nullptr;    // [n_rows][up_stride] bf16 (w3 output)
  int64_t gate_stride = 0;
  int64_t up_stride = 0;
  const float* row_weight = nullptr;  // [n_rows] routing weights, or null for none
  uint16_t* out = nullptr;            // [n_rows][out_stride] bf16
  int64_t out_stride = 0;
  int64_t n_rows = 0;
  int64_t n = 0;        // inter dim
  float limit = 10.0f;  // swiglu_limit
};

// Picks the implementation for the active CPU level; every level gives the same bits.
void SwiGlu(const SwiGluParams& p);

// The scalar definition (SwiGluElement per element).
void SwiGluRef(const SwiGluParams& p);

// 16 elements per step, the same fp32 operations per lane (ExpF32x16). Requires AVX-512
// (ActiveCpuLevel() == kAvx512).
void SwiGluAvx512(const SwiGluParams& p);

// 8 elements per step, the same per-lane operations (ExpF32x8). Requires AVX2 + FMA.
void SwiGluAvx2(const SwiGluParams& p);

// One element (exposed for tests): the fp32 value before the bf16 rounding.
float SwiGluElement(float gate, float up, float limit, const float* weight);

}  // namespace deepinfer::kernels
