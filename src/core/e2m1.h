// FP4 E2M1 (the MXFP4 element): bit 3 sign, bits 0-2 magnitude code with values
// {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Packed two per byte, element 2j in the low nibble of byte j.
//
// Encode saturates to ±6 and rounds to the nearest value, ties to the even code
// (0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4): the reference's FP4 QDQ rule.
// The sign of the input is kept, so -0.1 encodes as 0x8 (negative zero). NaN encodes as 0 (the
// format has no NaN; callers never produce one from finite activations).
#pragma once

#include <cstdint>

namespace deepinfer {

inline constexpr float kE2m1Max = 6.0f;
inline constexpr float kE2m1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

inline float E2m1ToFloat(uint8_t nibble) {
  const float v = kE2m1Values[nibble & 7];
  return (nibble & 8) ? -v : v;
}

inline uint8_t FloatToE2m1(float x) {
  const bool negative = x < 0.0f || (x == 0.0f && 1.0f / x < 0.0f);
  const float a = negative ? -x : x;
  uint8_t code;
  // Midpoints between neighbours; at a tie the even code wins (<= or < picks it).
  if (!(a > 0.25f))
    code = 0;  // also NaN
  else if (a < 0.75f)
    code = 1;
  else if (a <= 1.25f)
    code = 2;
  else if (a < 1.75f)
    code = 3;
  else if (a <= 2.5f)
    code = 4;
  else if (a < 3.5f)
    code = 5;
  else if (a <= 5.0f)
    code = 6;
  else
    code = 7;
  return static_cast<uint8_t>(code | (negative ? 8 : 0));
}

inline uint8_t PackE2m1Pair(uint8_t even, uint8_t odd) {
  return static_cast<uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
}

}  // namespace deepinfer
