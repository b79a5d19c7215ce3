// AVX-512 RMSNorm: the 64-lane order of rmsnorm.h held in four zmm accumulators.
#include <immintrin.h>

#include <cmath>

#include "core/check.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/rmsnorm.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
// The optimize pragma makes GCC 12 flag the intrinsics' internal self-initialised placeholders.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

inline __mmask16 TailMask(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

float SumSquares(const uint16_t* x, int64_t dim) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    for (int j = 0; j < 4; ++j) {
      const __m512 v = LoadBf16x16(x + i + 16 * j);
      acc[j] = _mm512_fmadd_ps(v, v, acc[j]);  // v*v exact: same as mul + add
    }
  }
  for (int j = 0; j < 4 && i + 16 * j < dim; ++j) {
    const __m512 v = MaskLoadBf16x16(x + i + 16 * j, TailMask(dim - i - 16 * j));
    acc[j] = _mm512_fmadd_ps(v, v, acc[j]);
  }
  // Fold 64 -> 32 -> 16 lanes, then within the register 16 -> 8 -> 4 -> 2 -> 1.
  const __m512 s32a = _mm512_add_ps(acc[0], acc[2]);
  const __m512 s32b = _mm512_add_ps(acc[1], acc[3]);
  const __m512 s16 = _mm512_add_ps(s32a, s32b);
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), _mm512_extractf32x8_ps(s16, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

}  // namespace

float RmsNormFactorAvx512(const uint16_t* x, int64_t dim, float eps) {
  const float mean = SumSquares(x, dim) / static_cast<float>(dim);
  return 1.0f / std::sqrt(mean + eps);
}

void RmsNormAvx512(const RmsNormParams& p) {
  CHECK(p.dim > 0) << "RmsNorm: dim must be positive";
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* x = p.x + r * p.x_stride;
    uint16_t* y = p.y + r * p.y_stride;
    const float mean = SumSquares(x, p.dim) / static_cast<float>(p.dim);
    const __m512 f = _mm512_set1_ps(1.0f / std::sqrt(mean + p.eps));
    for (int64_t i = 0; i < p.dim; i += 16) {
      const __mmask16 m = TailMask(p.dim - i);
      const __m512 v = _mm512_mul_ps(MaskLoadBf16x16(x + i, m), f);
      const __m512 out = _mm512_mul_ps(MaskLoadBf16x16(p.weight + i, m), v);
      _mm256_mask_storeu_epi16(y + i, m, F32x16ToBf16(out));
    }
  }
}

}  // namespace deepinfer::kernels
