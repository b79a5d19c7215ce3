// AVX-512 Fp4QdqPow2Block32 (kv_qdq.h): one 32-element block per pass, bit-identical to the
// scalar form. The e2m1 rounding is three round-to-nearest-even steps, one per binade of the grid:
// multiples of 0.5 below 2, integers in [2, 4), even integers from 4 (each step's even multiple is
// the grid's even code, so its ties go where FloatToE2m1's do). NaN inputs give +0, as there.
#include <immintrin.h>

#include "core/check.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/kv_qdq.h"

namespace deepinfer::kernels {

namespace {

// e2m1(clamp(v, -6, 6)) as a float; NaN lanes give +0.
inline __m512 RoundE2m1(__m512 v) {
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 c = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(6.0f)), _mm512_set1_ps(-6.0f));
  const __m512 a = _mm512_abs_ps(c);
  const __m512 halves = _mm512_roundscale_ps(c, (1 << 4) | kRne);
  const __m512 ones = _mm512_roundscale_ps(c, kRne);
  const __m512 twos = _mm512_mul_ps(
      _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(0.5f)), kRne), _mm512_set1_ps(2.0f));
  __m512 q = twos;
  q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(a, _mm512_set1_ps(4.0f), _CMP_LT_OQ), ones);
  q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(a, _mm512_set1_ps(2.0f), _CMP_LT_OQ), halves);
  return _mm512_maskz_mov_ps(ordered, q);
}

}  // namespace

void Fp4QdqPow2Block32Avx512(uint16_t* x, int64_t n) {
  CHECK(n % 32 == 0) << "Fp4QdqPow2Block32: n = " << n;
  constexpr float kMinAmax = 6.0f * 0x1p-126f;
  constexpr float kInv6 = 1.0f / 6.0f;
  for (int64_t b = 0; b < n; b += 32) {
    const __m512 lo = LoadBf16x16(x + b);
    const __m512 hi = LoadBf16x16(x + b + 16);
    // max(|x|, acc): a NaN lane keeps acc (the second operand when unordered), as the scalar
    // amax skips NaNs.
    __m512 m = _mm512_max_ps(_mm512_abs_ps(lo), _mm512_setzero_ps());
    m = _mm512_max_ps(_mm512_abs_ps(hi), m);
    const float amax = _mm512_reduce_max_ps(m);
    const __m512 s = _mm512_set1_ps(Pow2Scale(amax > kMinAmax ? amax : kMinAmax, kInv6));
    const __m512 ylo = _mm512_mul_ps(RoundE2m1(_mm512_div_ps(lo, s)), s);
    const __m512 yhi = _mm512_mul_ps(RoundE2m1(_mm512_div_ps(hi, s)), s);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + b), F32x16ToBf16(ylo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + b + 16), F32x16ToBf16(yhi));
  }
}

}  // namespace deepinfer::kernels
