// AVX2 hyper-connection stream passes (hc_stream.h): the reference's operations per element,
// 8 columns per register, the column tail element by element with the same operations.
#include <immintrin.h>

#include <cstdint>

#include "core/bf16.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/hc_stream.h"

// Every product and sum a separate rounding, as in the reference (GCC contracts by default).
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

void HcCollapseRowsAvx2(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                        uint16_t* y) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const float* p = pre + r * hc;
    int64_t d = 0;
    for (; d + 8 <= dim; d += 8) {
      __m256 acc = _mm256_mul_ps(_mm256_set1_ps(p[0]), LoadBf16x8(xr + d));
      for (int k = 1; k < hc; ++k) {
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(p[k]), LoadBf16x8(xr + k * dim + d)));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + r * dim + d), F32x8ToBf16(acc));
    }
    for (; d < dim; ++d) {
      float acc = p[0] * Bf16ToFloat(xr[d]);
      for (int k = 1; k < hc; ++k) acc = acc + p[k] * Bf16ToFloat(xr[k * dim + d]);
      y[r * dim + d] = FloatToBf16(acc);
    }
  }
}

void HcPostRowsAvx2(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                    const float* comb, int64_t rows, uint16_t* out) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const uint16_t* yr = y + r * dim;
    const float* cm = comb + r * hc * hc;
    for (int k = 0; k < hc; ++k) {
      const float pk = post[r * hc + k];
      uint16_t* o = out + (r * hc + k) * dim;
      int64_t d = 0;
      for (; d + 8 <= dim; d += 8) {
        __m256 acc = _mm256_mul_ps(_mm256_set1_ps(cm[k]), LoadBf16x8(xr + d));
        for (int j = 1; j < hc; ++j) {
          acc = _mm256_add_ps(
              acc, _mm256_mul_ps(_mm256_set1_ps(cm[j * hc + k]), LoadBf16x8(xr + j * dim + d)));
        }
        const __m256 py = _mm256_mul_ps(_mm256_set1_ps(pk), LoadBf16x8(yr + d));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + d), F32x8ToBf16(_mm256_add_ps(py, acc)));
      }
      for (; d < dim; ++d) {
        float acc = cm[k] * Bf16ToFloat(xr[d]);
        for (int j = 1; j < hc; ++j) acc = acc + cm[j * hc + k] * Bf16ToFloat(xr[j * dim + d]);
        o[d] = FloatToBf16(pk * Bf16ToFloat(yr[d]) + acc);
      }
    }
  }
}

}  // namespace deepinfer::kernels
