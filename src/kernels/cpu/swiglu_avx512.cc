// AVX-512 SwiGLU (swiglu.h): per lane the operations of SwiGluElement in its order, so the
// output is bit-identical to SwiGluRef, NaN and the clamp edges included.
#include <immintrin.h>

#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/exp_f32_avx512.h"
#include "kernels/cpu/swiglu.h"

namespace deepinfer::kernels {
namespace {

// One 16-lane step: gate / up in fp32 -> h in fp32 before the bf16 rounding.
template <bool kClamp, bool kWeight>
inline __m512 Step(__m512 g, __m512 u, __m512 lo, __m512 hi, __m512 w) {
  if constexpr (kClamp) {
    // std::clamp(u, lo, hi) and std::min(g, hi) keep a NaN operand; max/min return their second
    // operand when either is NaN, so the data goes second.
    u = _mm512_min_ps(hi, _mm512_max_ps(lo, u));
    g = _mm512_min_ps(hi, g);
  }
  const __m512 neg_g = _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(g), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), ExpF32x16(neg_g)));
  __m512 h = _mm512_mul_ps(silu, u);
  if constexpr (kWeight) h = _mm512_mul_ps(w, h);
  return h;
}

template <bool kClamp, bool kWeight>
void Rows(const SwiGluParams& p) {
  const __m512 lo = _mm512_set1_ps(-p.limit), hi = _mm512_set1_ps(p.limit);
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* g = p.gate + r * p.gate_stride;
    const uint16_t* u = p.up + r * p.up_stride;
    uint16_t* o = p.out + r * p.out_stride;
    const __m512 w = kWeight ? _mm512_set1_ps(p.row_weight[r]) : _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= p.n; i += 16) {
      const __m512 h = Step<kClamp, kWeight>(LoadBf16x16(g + i), LoadBf16x16(u + i), lo, hi, w);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), F32x16ToBf16(h));
    }
    if (i < p.n) {
      const __mmask16 m = static_cast<__mmask16>((1u << (p.n - i)) - 1);
      const __m512 h =
          Step<kClamp, kWeight>(MaskLoadBf16x16(g + i, m), MaskLoadBf16x16(u + i, m), lo, hi, w);
      _mm256_mask_storeu_epi16(o + i, m, F32x16ToBf16(h));
    }
  }
}

}  // namespace

void SwiGluAvx512(const SwiGluParams& p) {
  const bool clamp = p.limit > 0.0f, weight = p.row_weight != nullptr;
  if (clamp && weight) {
    Rows<true, true>(p);
  } else if (clamp) {
    Rows<true, false>(p);
  } else if (weight) {
    Rows<false, true>(p);
  } else {
    Rows<false, false>(p);
  }
}

}  // namespace deepinfer::kernels
