#include <bit>
#include <cmath>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"

namespace deepinfer::kernels {

namespace {
// Scale of one 32-block: 2^ceil(log2(max(amax, 1e-4) * (1/448))), as its ue8m0 code.
uint8_t BlockScaleCode(const uint16_t* x) {
  float amax = 0.0f;
  for (int i = 0; i < kActQuantBlock; ++i) amax = std::fmax(amax, std::fabs(Bf16ToFloat(x[i])));
  const float t = std::fmax(amax, 1e-4f) * (1.0f / 448.0f);
  return FloatToUe8m0(t);  // rounds up to the next power of two = 2^ceil(log2 t)
}
}  // namespace

void QuantizeActE4m3Ref(const uint16_t* x, int64_t k, uint8_t* codes, float* scales) {
  for (int64_t b = 0; b < k / kActQuantBlock; ++b) {
    const uint8_t sc = BlockScaleCode(x + b * kActQuantBlock);
    const float inv = ExactPow2(127 - sc);  // 1/s, exact
    scales[b] = Ue8m0ToFloat(sc);
    for (int i = 0; i < kActQuantBlock; ++i) {
      const int64_t j = b * kActQuantBlock + i;
      codes[j] = FloatToE4m3(Bf16ToFloat(x[j]) * inv);  // FloatToE4m3 saturates at ±448
    }
  }
}

void QuantizeActScaledBf16Ref(const uint16_t* x, int64_t k, uint16_t* out) {
  uint8_t codes[kActQuantBlock];
  float scale;
  for (int64_t b = 0; b < k / kActQuantBlock; ++b) {
    QuantizeActE4m3Ref(x + b * kActQuantBlock, kActQuantBlock, codes, &scale);
    for (int i = 0; i < kActQuantBlock; ++i) {
      out[b * kActQuantBlock + i] = FloatToBf16(E4m3ToFloat(codes[i]) * scale);
    }
  }
}

}  // namespace deepinfer::kernels
