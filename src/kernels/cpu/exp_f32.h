// ExpF32: a deterministic fp32 exp shared by every kernel that needs one.
//
// Why not std::exp: the vectorized kernels (e.g. sparse_attn_avx512.cc) must agree bit for bit
// with their scalar references, so both evaluate this same sequence of IEEE operations
// (exp_f32_avx512.h is the 16-lane twin, operation for operation):
//   x  = clamp(x, -104, 89)                      (fmax/fmin: NaN becomes -104 -> result 0)
//   n  = round_to_nearest_even(x * log2(e))
//   r  = fma(n, -C1, x); r = fma(n, -C2, r)      (C1 + C2 = ln 2, Cody-Waite split)
//   p  = degree-5 Horner polynomial in r (Cephes expf coefficients), all fma
//   y  = fma(p, r*r, r) + 1
//   result = y * 2^n, correctly rounded (ldexp / vscalefps), so tiny results become subnormal
//   or 0 and large ones +inf.
// Accuracy: within 2 ulp of the exact exp on the normal range (tested in exp_f32_test.cc).
// exp(-inf) = 0 exactly, which the softmax kernels rely on for masked entries.
#pragma once

#include <cmath>

namespace deepinfer::kernels {

inline constexpr float kExpClampLo = -104.0f;
inline constexpr float kExpClampHi = 89.0f;
inline constexpr float kExpLog2e = 1.44269504088896341f;
inline constexpr float kExpC1 = 0.693359375f;
inline constexpr float kExpC2 = -2.12194440e-4f;
inline constexpr float kExpP0 = 1.9875691500e-4f;
inline constexpr float kExpP1 = 1.3981999507e-3f;
inline constexpr float kExpP2 = 8.3334519073e-3f;
inline constexpr float kExpP3 = 4.1665795894e-2f;
inline constexpr float kExpP4 = 1.6666665459e-1f;
inline constexpr float kExpP5 = 5.0000001201e-1f;

inline float ExpF32(float x) {
  x = std::fmin(std::fmax(x, kExpClampLo), kExpClampHi);
  const float n = std::nearbyint(x * kExpLog2e);
  float r = std::fma(n, -kExpC1, x);
  r = std::fma(n, -kExpC2, r);
  float p = kExpP0;
  p = std::fma(p, r, kExpP1);
  p = std::fma(p, r, kExpP2);
  p = std::fma(p, r, kExpP3);
  p = std::fma(p, r, kExpP4);
  p = std::fma(p, r, kExpP5);
  const float r2 = r * r;
  const float y = std::fma(p, r2, r) + 1.0f;
  return std::ldexp(y, static_cast<int>(n));
}

// sigmoid(x) = 1 / (1 + exp(-x)), the form torch's CPU kernel evaluates.
inline float SigmoidF32(float x) { return 1.0f / (1.0f + ExpF32(-x)); }

}  // namespace deepinfer::kernels
