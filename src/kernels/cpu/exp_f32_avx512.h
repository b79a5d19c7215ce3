// 16-lane twin of ExpF32 (exp_f32.h): the same IEEE operations in the same order, so every lane
// is bit-identical to the scalar function. Include only from *_avx512.cc files.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

inline __m512 ExpF32x16(__m512 x) {
  // max/min return the second operand when the first is NaN, as fmax/fmin do in ExpF32.
  x = _mm512_max_ps(x, _mm512_set1_ps(kExpClampLo));
  x = _mm512_min_ps(x, _mm512_set1_ps(kExpClampHi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kExpLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kExpC1), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kExpC2), r);
  __m512 p = _mm512_set1_ps(kExpP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP5));
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

}  // namespace deepinfer::kernels
