// AVX2 RMSNorm: the 64-lane order of rmsnorm.h held in eight ymm accumulators.
#include <immintrin.h>

#include <cmath>

#include "core/bf16.h"
#include "core/check.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/rmsnorm.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

// Up to 8 bf16 values from x (n of them), zero padded.
inline __m256 LoadTail(const uint16_t* x, int64_t n) {
  alignas(16) uint16_t t[8] = {};
  for (int64_t i = 0; i < n && i < 8; ++i) t[i] = x[i];
  return LoadBf16x8(t);
}

float SumSquares(const uint16_t* x, int64_t dim) {
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    for (int j = 0; j < 8; ++j) {
      const __m256 v = LoadBf16x8(x + i + 8 * j);
      acc[j] = _mm256_fmadd_ps(v, v, acc[j]);  // v*v exact: same as mul + add
    }
  }
  for (int j = 0; j < 8 && i + 8 * j < dim; ++j) {
    const int64_t left = dim - i - 8 * j;
    const __m256 v = left >= 8 ? LoadBf16x8(x + i + 8 * j) : LoadTail(x + i + 8 * j, left);
    acc[j] = _mm256_fmadd_ps(v, v, acc[j]);
  }
  // Fold 64 -> 32 -> 16 -> 8 lanes across registers, then 8 -> 4 -> 2 -> 1 within one.
  for (int j = 0; j < 4; ++j) acc[j] = _mm256_add_ps(acc[j], acc[j + 4]);
  for (int j = 0; j < 2; ++j) acc[j] = _mm256_add_ps(acc[j], acc[j + 2]);
  const __m256 s8 = _mm256_add_ps(acc[0], acc[1]);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

}  // namespace

float RmsNormFactorAvx2(const uint16_t* x, int64_t dim, float eps) {
  const float mean = SumSquares(x, dim) / static_cast<float>(dim);
  return 1.0f / std::sqrt(mean + eps);
}

void RmsNormAvx2(const RmsNormParams& p) {
  CHECK(p.dim > 0) << "RmsNorm: dim must be positive";
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* x = p.x + r * p.x_stride;
    uint16_t* y = p.y + r * p.y_stride;
    const float f = RmsNormFactorAvx2(x, p.dim, p.eps);
    const __m256 fv = _mm256_set1_ps(f);
    int64_t i = 0;
    for (; i + 8 <= p.dim; i += 8) {
      const __m256 v = _mm256_mul_ps(LoadBf16x8(x + i), fv);
      const __m256 out = _mm256_mul_ps(LoadBf16x8(p.weight + i), v);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), F32x8ToBf16(out));
    }
    for (; i < p.dim; ++i) y[i] = FloatToBf16(Bf16ToFloat(p.weight[i]) * (Bf16ToFloat(x[i]) * f));
  }
}

}  // namespace deepinfer::kernels
