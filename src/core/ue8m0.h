// UE8M0 (torch.float8_e8m0fnu): an unsigned power of two, value 2^(code-127); 0xFF is NaN.
// Code 0 is 2^-127, a binary32 subnormal, so every finite code decodes exactly to float.
//
// Encode is used for block scales, which the reference always computes as powers of two:
// a power of two encodes exactly; any other positive value rounds *up* to the next power of two
// (a scale must never shrink, or the quantized block would overflow). Values at or below 2^-127
// give code 0, above 2^127 code 254; NaN, negatives and ±inf give 0xFF.
#pragma once

#include <bit>
#include <cstdint>

namespace deepinfer {

inline float Ue8m0ToFloat(uint8_t code) {
  if (code == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  if (code == 0) return 0x1p-127f;
  return std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
}

inline uint8_t FloatToUe8m0(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (u >= 0x7F800000u) return 0xFF;  // NaN, +inf, and every negative value (sign bit set)
  if (u <= 0x00400000u) return 0;     // <= 2^-127 (including +0)
  if (u < 0x00800000u) return 1;      // subnormal in (2^-127, 2^-126)
  uint32_t exp = u >> 23;
  if ((u & 0x7FFFFFu) != 0) ++exp;  // not a power of two: round up
  return exp > 254 ? 254 : static_cast<uint8_t>(exp);
}

// 2^e for an integer exponent in the normal binary32 range, built from bits (no libm).
inline float ExactPow2(int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); }

}  // namespace deepinfer
