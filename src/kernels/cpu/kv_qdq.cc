#include "kernels/cpu/kv_qdq.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/bf16.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"

namespace deepinfer::kernels {

namespace {

// The largest |x| of the group; NaNs, quiet or signalling, do not count (std::fmax would turn a
// signalling one into a quiet NaN that the next element then replaces).
float GroupAmax(const uint16_t* x, int g) {
  float amax = 0.0f;
  for (int i = 0; i < g; ++i) {
    const float a = std::fabs(Bf16ToFloat(x[i]));
    if (a > amax) amax = a;
  }
  return amax;
}

// Shared FP4 step: y = bf16(e2m1(clamp(x / s, -6, 6)) * s).
void Fp4Group(uint16_t* x, int g, float s) {
  for (int i = 0; i < g; ++i) {
    const float v = std::clamp(Bf16ToFloat(x[i]) / s, -kE2m1Max, kE2m1Max);
    x[i] = FloatToBf16(E2m1ToFloat(FloatToE2m1(v)) * s);
  }
}

}  // namespace

float Pow2Scale(float amax, float inv_max) {
  const uint32_t bits = std::bit_cast<uint32_t>(amax * inv_max);
  const int32_t exp = static_cast<int32_t>((bits >> 23) & 0xFFu);
  const int32_t log2_ceil = exp - 127 + ((bits & 0x7FFFFFu) != 0 ? 1 : 0);
  return std::bit_cast<float>(static_cast<uint32_t>(log2_ceil + 127) << 23);
}

void Fp8QdqBlock32(uint16_t* x, int64_t n) {
  CHECK(n % 32 == 0) << "Fp8QdqBlock32: n = " << n;
  constexpr float kInv448 = 1.0f / 448.0f;
  for (int64_t b = 0; b < n; b += 32) {
    const float s = Pow2Scale(std::fmax(GroupAmax(x + b, 32), 1e-4f), kInv448);
    for (int i = 0; i < 32; ++i) {
      const float q = E4m3ToFloat(FloatToE4m3(Bf16ToFloat(x[b + i]) / s));  // saturates at 448
      x[b + i] = FloatToBf16(q * s);
    }
  }
}

void Fp4QdqE4m3Block16(uint16_t* x, int64_t n) {
  CHECK(n % 16 == 0) << "Fp4QdqE4m3Block16: n = " << n;
  constexpr float kMinAmax = 6.0f * 0x1p-9f;
  for (int64_t b = 0; b < n; b += 16) {
    const float amax = std::fmax(GroupAmax(x + b, 16), kMinAmax);
    const float s = E4m3ToFloat(FloatToE4m3(amax / kE2m1Max));
    Fp4Group(x + b, 16, s);
  }
}

void Fp4QdqPow2Block32(uint16_t* x, int64_t n) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    Fp4QdqPow2Block32Avx512(x, n);
  } else {
    Fp4QdqPow2Block32Ref(x, n);
  }
}

void Fp4QdqPow2Block32Ref(uint16_t* x, int64_t n) {
  CHECK(n % 32 == 0) << "Fp4QdqPow2Block32: n = " << n;
  constexpr float kMinAmax = 6.0f * 0x1p-126f;
  constexpr float kInv6 = 1.0f / 6.0f;
  for (int64_t b = 0; b < n; b += 32) {
    const float s = Pow2Scale(std::fmax(GroupAmax(x + b, 32), kMinAmax), kInv6);
    Fp4Group(x + b, 32, s);
  }
}

}  // namespace deepinfer::kernels
