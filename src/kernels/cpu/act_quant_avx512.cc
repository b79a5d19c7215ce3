// Vectorized act_quant producing scaled bf16 activations, in fp32 bit arithmetic. Each 32-element
// block is two zmm of 16 floats. Steps mirror QuantizeActScaledBf16Ref exactly:
//   amax (NaN-free integer max of |x| bits), t = max(amax, 1e-4f) * (1/448.f) in fp32,
//   s = 2^ceil(log2 t) from t's exponent bits, v = |x| / s (exact: a power-of-two multiply),
//   e4m3 RNE of v: |v| >= 2^-6 rounds the mantissa to 3 bits (ties to even, saturate at 448),
//   |v| < 2^-6 rounds to the 2^-9 grid (roundscale, ties to even),
//   out = bf16(sign | q·s); q·s has at most 4 significant bits, so the bf16 truncation is exact.
#include <immintrin.h>

#include "kernels/cpu/act_quant.h"

// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsic headers as
// uninitialised at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace deepinfer::kernels {

namespace {

// Quantizes one group of 16 lanes given the block's scale exponent code.
inline __m256i QuantizeHalf(__m512i bits, __m512 inv, __m512 s) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i sign = _mm512_andnot_si512(abs_mask, bits);
  const __m512 v = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(bits, abs_mask)), inv);
  const __m512i vu = _mm512_castps_si512(v);
  // Normal e4m3 range: round the 23-bit mantissa to 3 bits, ties to even.
  __m512i rn = _mm512_add_epi32(
      vu, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF),
                           _mm512_and_si512(_mm512_srli_epi32(vu, 20), _mm512_set1_epi32(1))));
  rn = _mm512_and_si512(rn, _mm512_set1_epi32(~0xFFFFF));
  rn = _mm512_min_epu32(rn, _mm512_set1_epi32(0x43E00000));  // saturate at 448
  // Subnormal e4m3 range (< 2^-6): nearest multiple of 2^-9, ties to even.
  const __m512 sub =
      _mm512_mul_ps(_mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(512.0f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                    _mm512_set1_ps(1.0f / 512.0f));
  const __mmask16 is_sub = _mm512_cmplt_epu32_mask(vu, _mm512_set1_epi32(0x3C800000));
  const __m512 q = _mm512_mask_mov_ps(_mm512_castsi512_ps(rn), is_sub, sub);
  const __m512i out = _mm512_or_si512(_mm512_castps_si512(_mm512_mul_ps(q, s)), sign);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(out, 16));
}

}  // namespace

void QuantizeActScaledBf16Avx512(const uint16_t* x, int64_t k, uint16_t* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i inf_bits = _mm512_set1_epi32(0x7F800000);
  for (int64_t b = 0; b < k / kActQuantBlock; ++b) {
    const uint16_t* xb = x + b * kActQuantBlock;
    const __m512i lo = _mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb))), 16);
    const __m512i hi = _mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 16))), 16);
    // amax over |x| as integers (non-negative floats order like their bits); NaN lanes ignored,
    // as std::fmax ignores them in the reference.
    __m512i a_lo = _mm512_and_si512(lo, abs_mask), a_hi = _mm512_and_si512(hi, abs_mask);
    a_lo = _mm512_maskz_mov_epi32(_mm512_cmple_epu32_mask(a_lo, inf_bits), a_lo);
    a_hi = _mm512_maskz_mov_epi32(_mm512_cmple_epu32_mask(a_hi, inf_bits), a_hi);
    const int32_t amax_bits = _mm512_reduce_max_epi32(_mm512_max_epu32(a_lo, a_hi));
    float amax;
    __builtin_memcpy(&amax, &amax_bits, 4);
    const float t = (amax > 1e-4f ? amax : 1e-4f) * (1.0f / 448.0f);
    uint32_t tu;
    __builtin_memcpy(&tu, &t, 4);
    // t is a normal positive float here (>= 2.2e-7; finite for finite x): ceil to a power of two.
    int32_t code = static_cast<int32_t>(tu >> 23) + ((tu & 0x7FFFFFu) != 0 ? 1 : 0);
    if (code > 254) code = 254;
    const __m512 s = _mm512_castsi512_ps(_mm512_set1_epi32(code << 23));
    const __m512 inv = _mm512_castsi512_ps(_mm512_set1_epi32((254 - code) << 23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kActQuantBlock),
                        QuantizeHalf(lo, inv, s));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kActQuantBlock + 16),
                        QuantizeHalf(hi, inv, s));
  }
}

}  // namespace deepinfer::kernels
