// Scalar reference MXFP4 GEMM on the checkpoint layout: the numerics contract of mxfp4_gemm.h
// written as plainly as possible (no packing, no vector code).
#include <cmath>

#include "core/bf16.h"
#include "core/check.h"
#include "core/e2m1.h"
#include "core/ue8m0.h"
#include "kernels/cpu/dpbf16_step.h"
#include "kernels/cpu/mxfp4_gemm.h"

namespace deepinfer::kernels {

void Mxfp4GemmRef(const uint8_t* weight, const uint8_t* scale, int64_t n, int64_t k,
                  const uint16_t* xq, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                  int64_t ldo) {
  CHECK(k % kMxfp4Block == 0) << "k = " << k;
  CHECK(out_dtype == DType::kF32 || out_dtype == DType::kBF16) << "output dtype";
  const int64_t n_blocks = k / kMxfp4Block;
  for (int64_t m = 0; m < n_rows; ++m) {
    const uint16_t* x = xq + m * ldx;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* w_row = weight + r * (k / 2);
      float tot = 0.0f;
      for (int64_t b = 0; b < n_blocks; ++b) {
        float blocksum = 0.0f;
        for (int64_t p = b * 16; p < (b + 1) * 16; ++p) {  // one checkpoint byte = one k-pair
          const uint8_t byte = w_row[p];
          const uint32_t w_pair =
              FloatToBf16(E2m1ToFloat(byte & 0xF)) |
              (static_cast<uint32_t>(FloatToBf16(E2m1ToFloat(byte >> 4))) << 16);
          blocksum = DpBf16Step(blocksum, LoadBf16Pair(x + 2 * p), w_pair);
        }
        tot = std::fma(blocksum, Ue8m0ToFloat(scale[r * n_blocks + b]), tot);
      }
      if (out_dtype == DType::kF32) {
        static_cast<float*>(out)[m * ldo + r] = tot;
      } else {
        static_cast<uint16_t*>(out)[m * ldo + r] = FloatToBf16(tot);
      }
    }
  }
}

}  // namespace deepinfer::kernels
