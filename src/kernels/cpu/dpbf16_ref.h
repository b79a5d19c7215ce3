// Scalar emulation of one VDPBF16PS lane step, so scalar references can define the exact order
// the AVX-512 kernels use: for a bf16 pair (a0, a1) . (b0, b1) the instruction does
//   acc += a1 * b1;  acc += a0 * b0     (odd element first), each add rounded to nearest even,
// with bf16 denormal inputs read as zero (DAZ) and denormal fp32 results flushed to zero (FTZ).
// bf16 x bf16 products are exact in fp32, so this matches the instruction bit for bit whenever
// the products stay in the normal fp32 range; below 2^-126 it follows DAZ/FTZ but a last-place
// tie could still round differently (never seen with real activations).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace deepinfer::kernels {

inline float Bf16ToFloatDaz(uint16_t b) {
  if ((b & 0x7F80u) == 0) b &= 0x8000u;  // zero or denormal -> signed zero
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline float FlushDenormal(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x7F800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : x;
}

// acc + a*b with both bf16 operands DAZ'd and the sum FTZ'd (one half of a VDPBF16PS step).
inline float DpStep(float acc, uint16_t a, uint16_t b) {
  return FlushDenormal(acc + Bf16ToFloatDaz(a) * Bf16ToFloatDaz(b));
}

// dot(a, b) over n (even) bf16 elements in VDPBF16PS pair order: pairs ascending, odd first.
inline float DotBf16PairOrder(const uint16_t* a, const uint16_t* b, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i += 2) {
    acc = DpStep(acc, a[i + 1], b[i + 1]);
    acc = DpStep(acc, a[i], b[i]);
  }
  return acc;
}

}  // namespace deepinfer::kernels
