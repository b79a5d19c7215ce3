// FP8 E4M3FN (torch.float8_e4m3fn): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits.
// No infinities; 0x7F and 0xFF are NaN; largest finite 448; subnormals m·2^-9 below 2^-6.
//
// Encode saturates: |x| > 448 (and ±inf) becomes ±448, matching the reference, which clamps to
// ±448 before its cast; rounding is to nearest, ties to even. NaN encodes as 0x7F (sign kept).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace deepinfer {

inline constexpr float kE4m3Max = 448.0f;

inline float E4m3ToFloat(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exp = (code >> 3) & 0xFu;
  const uint32_t man = code & 0x7u;
  if (exp == 0xF && man == 0x7) return std::bit_cast<float>(sign | 0x7FC00000u);  // NaN
  float magnitude;
  if (exp == 0) {
    magnitude = static_cast<float>(man) * 0x1p-9f;  // subnormal (and zero)
  } else {
    magnitude = std::bit_cast<float>(((exp + 120u) << 23) | (man << 20));
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
}

inline uint8_t FloatToE4m3(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) return sign | 0x7F;                       // NaN
  if (u >= 0x43E00000u) return sign | 0x7E;                      // >= 448 (incl. inf): saturate
  if (u < 0x3C800000u) {                                         // < 2^-6: subnormal grid of 2^-9
    const float scaled = std::bit_cast<float>(u) * 512.0f;       // exact (power-of-two scaling)
    return sign | static_cast<uint8_t>(std::nearbyint(scaled));  // RNE; 8 → code 0x08 = 2^-6
  }
  // Normal: round the 23-bit mantissa to 3 bits, ties to even; a carry bumps the exponent.
  u += 0x7FFFFu + ((u >> 20) & 1u);
  u &= ~0xFFFFFu;
  if (u > 0x43E00000u) return sign | 0x7E;  // rounded past 448: saturate
  const uint32_t exp = (u >> 23) - 120u;
  return sign | static_cast<uint8_t>((exp << 3) | ((u >> 20) & 7u));
}

}  // namespace deepinfer
