// Random MXFP4 operands shared by the MXFP4 kernel tests (checkpoint layout).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"

namespace deepinfer::kernels::test_util {

// An [n, k] MXFP4 weight as the checkpoint stores it: two e2m1 codes a byte, one ue8m0 scale per
// 32 elements of a row.
struct Mxfp4Weights {
  int64_t n, k;
  std::vector<uint8_t> weight;  // [n, k/2]
  std::vector<uint8_t> scale;   // [n, k/32]
  Mxfp4Source source() const { return {weight.data(), scale.data(), n}; }
};

// Random nibbles; scale codes uniform in [lo, hi].
inline Mxfp4Weights RandomMxfp4Weights(int64_t n, int64_t k, uint32_t seed, int lo = 120,
                                       int hi = 130) {
  std::mt19937 rng(seed);
  Mxfp4Weights w{n, k, std::vector<uint8_t>(n * k / 2), std::vector<uint8_t>(n * k / 32)};
  for (auto& b : w.weight) b = static_cast<uint8_t>(rng());
  std::uniform_int_distribution<int> sd(lo, hi);
  for (auto& s : w.scale) s = static_cast<uint8_t>(sd(rng));
  return w;
}

// m rows of k quantizer outputs (bf16 q·s) from N(0, sigma) inputs with outliers, rows ldx
// apart; the gaps hold NaN (a kernel that reads them shows it).
inline std::vector<uint16_t> RandomStridedActivations(int64_t m, int64_t k, int64_t ldx,
                                                      uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<uint16_t> x(k), xq(m * ldx, 0x7FC0);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      float v = nd(rng);
      if (i % 97 == 5) v *= 300.0f;
      if (i % 89 == 3) v *= 1e-6f;
      x[i] = FloatToBf16(v);
    }
    QuantizeActScaledBf16Ref(x.data(), k, xq.data() + r * ldx);
  }
  return xq;
}

}  // namespace deepinfer::kernels::test_util
