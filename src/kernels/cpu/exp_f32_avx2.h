// 8-lane AVX2 twin of ExpF32 (exp_f32.h): the same IEEE operations in the same order, so every
// lane is bit-identical to the scalar function. AVX2 has no vscalefps, so y * 2^n is two exact
// power-of-two products: n = n1 + n2 with n1 = floor(n / 2); both factors are normal numbers for
// n in [-150, 128] (the clamp's range), y * 2^n1 stays normal (exact), and the second product
// rounds once, as ldexp does (gradual underflow and overflow included). Run it with the default
// MXCSR (no flush-to-zero): the scalar function produces subnormal results.
// Include only from *_avx2.cc files.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

inline __m256 ExpF32x8(__m256 x) {
  // max/min return the second operand when the first is NaN, as fmax/fmin do in ExpF32.
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpClampLo));
  x = _mm256_min_ps(x, _mm256_set1_ps(kExpClampHi));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kExpLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpC1), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpC2), r);
  __m256 p = _mm256_set1_ps(kExpP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, f1), f2);
}

}  // namespace deepinfer::kernels
