// The reference follows the official block structure literally and emulates `vdpbf16ps` including
// its denormal handling (DAZ on inputs, FTZ on each rounded sum), so that it would stay the
// definition even for inputs outside the act_quant contract. For act_quant outputs the flushes
// never act (fp8_gemm.h explains why), which is what lets the FMA and plain C++ paths match.
#include "kernels/cpu/fp8_gemm_ref.h"

#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"

namespace deepinfer::kernels {

namespace {
// Flush an fp32 subnormal to a zero of the same sign (DAZ / FTZ).
inline float Flush(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}

// One `vdpbf16ps` lane step: acc + a1·b1 (rounded, flushed), then + a0·b0 (rounded, flushed).
// Products of two bf16 values are exact in fp32 unless they under/overflow.
inline float DpBf16Pair(float acc, float a0, float a1, float b0, float b1) {
  acc = Flush(acc + Flush(Flush(a1) * Flush(b1)));
  acc = Flush(acc + Flush(Flush(a0) * Flush(b0)));
  return acc;
}
}  // namespace

void Fp8GemmRefQuantized(const uint16_t* xq, int64_t m, int64_t k, const uint8_t* codes,
                         const uint8_t* scales, int64_t n, float* out) {
  const int64_t kb = k / 32;
  for (int64_t i = 0; i < m; ++i) {
    const uint16_t* x = xq + i * k;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* w = codes + r * k;
      float tot = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        float blocksum = 0.0f;
        for (int64_t j = 0; j < 16; ++j) {
          const int64_t c = b * 32 + 2 * j;
          blocksum = DpBf16Pair(blocksum, Bf16ToFloat(x[c]), Bf16ToFloat(x[c + 1]),
                                E4m3ToFloat(w[c]), E4m3ToFloat(w[c + 1]));
        }
        tot = std::fma(blocksum, Ue8m0ToFloat(scales[(r / 32) * kb + b]), tot);
      }
      out[i * n + r] = tot;
    }
  }
}

void Fp8GemmRef(const uint16_t* x, int64_t m, int64_t k, const uint8_t* codes,
                const uint8_t* scales, int64_t n, float* out) {
  std::vector<uint16_t> xq(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m; ++i) QuantizeActScaledBf16Ref(x + i * k, k, xq.data() + i * k);
  Fp8GemmRefQuantized(xq.data(), m, k, codes, scales, n, out);
}

}  // namespace deepinfer::kernels
