// AVX-512 hyper-connection stream passes (hc_stream.h): the reference's operations per element,
// 16 columns per register, masked tail.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/hc_stream.h"
#include "kernels/cpu/store_out_avx512.h"

namespace deepinfer::kernels {

void HcCollapseRowsAvx512(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                          uint16_t* y) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const float* p = pre + r * hc;
    for (int64_t d = 0; d < dim; d += 16) {
      const __mmask16 m = avx512::TailMask(dim - d);
      __m512 acc = _mm512_mul_ps(_mm512_set1_ps(p[0]), MaskLoadBf16x16(xr + d, m));
      for (int k = 1; k < hc; ++k) {
        acc = _mm512_add_ps(
            acc, _mm512_mul_ps(_mm512_set1_ps(p[k]), MaskLoadBf16x16(xr + k * dim + d, m)));
      }
      _mm256_mask_storeu_epi16(y + r * dim + d, m, F32x16ToBf16(acc));
    }
  }
}

void HcPostRowsAvx512(const HcStreamShape& s, const uint16_t* y, const uint16_t* x,
                      const float* post, const float* comb, int64_t rows, uint16_t* out) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const float* cm = comb + r * hc * hc;
    for (int k = 0; k < hc; ++k) {
      const __m512 pk = _mm512_set1_ps(post[r * hc + k]);
      uint16_t* o = out + (r * hc + k) * dim;
      for (int64_t d = 0; d < dim; d += 16) {
        const __mmask16 m = avx512::TailMask(dim - d);
        __m512 acc = _mm512_mul_ps(_mm512_set1_ps(cm[k]), MaskLoadBf16x16(xr + d, m));
        for (int j = 1; j < hc; ++j) {
          acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(cm[j * hc + k]),
                                                 MaskLoadBf16x16(xr + j * dim + d, m)));
        }
        const __m512 py = _mm512_mul_ps(pk, MaskLoadBf16x16(y + r * dim + d, m));
        _mm256_mask_storeu_epi16(o + d, m, F32x16ToBf16(_mm512_add_ps(py, acc)));
      }
    }
  }
}

}  // namespace deepinfer::kernels
