// bfloat16: the upper 16 bits of an IEEE-754 binary32.
// Encode rounds to nearest, ties to even (as torch's float->bfloat16 cast); NaN stays a quiet NaN
// with its sign. Decode is exact.
#pragma once

#include <bit>
#include <cstdint>

namespace deepinfer {

inline float Bf16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Round a float to the nearest bf16 value (the reference's "store as bf16" rounding point).
inline float RoundToBf16(float f) { return Bf16ToFloat(FloatToBf16(f)); }

}  // namespace deepinfer
