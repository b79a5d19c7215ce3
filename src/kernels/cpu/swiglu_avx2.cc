// AVX2 SwiGLU (swiglu.h): per lane the operations of SwiGluElement in its order, so the output is
// bit-identical to SwiGluRef, NaN and the clamp edges included (the AVX-512 twin's argument).
#include <immintrin.h>

#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/exp_f32_avx2.h"
#include "kernels/cpu/swiglu.h"

// Keep every mul and add a separate rounding, as in SwiGluElement.
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {
namespace {

template <bool kClamp, bool kWeight>
inline __m256 Step(__m256 g, __m256 u, __m256 lo, __m256 hi, __m256 w) {
  if constexpr (kClamp) {
    // max/min return their second operand when either is NaN: the data goes second.
    u = _mm256_min_ps(hi, _mm256_max_ps(lo, u));
    g = _mm256_min_ps(hi, g);
  }
  const __m256 neg_g = _mm256_xor_ps(g, _mm256_set1_ps(-0.0f));
  const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), ExpF32x8(neg_g)));
  __m256 h = _mm256_mul_ps(silu, u);
  if constexpr (kWeight) h = _mm256_mul_ps(w, h);
  return h;
}

template <bool kClamp, bool kWeight>
void Rows(const SwiGluParams& p) {
  const __m256 lo = _mm256_set1_ps(-p.limit), hi = _mm256_set1_ps(p.limit);
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* g = p.gate + r * p.gate_stride;
    const uint16_t* u = p.up + r * p.up_stride;
    uint16_t* o = p.out + r * p.out_stride;
    const __m256 w = kWeight ? _mm256_set1_ps(p.row_weight[r]) : _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= p.n; i += 8) {
      const __m256 h = Step<kClamp, kWeight>(LoadBf16x8(g + i), LoadBf16x8(u + i), lo, hi, w);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), F32x8ToBf16(h));
    }
    if (i < p.n) {  // tail through a zero-padded copy
      alignas(32) uint16_t gt[8] = {}, ut[8] = {}, ot[8];
      for (int64_t j = i; j < p.n; ++j) {
        gt[j - i] = g[j];
        ut[j - i] = u[j];
      }
      const __m256 h = Step<kClamp, kWeight>(LoadBf16x8(gt), LoadBf16x8(ut), lo, hi, w);
      _mm_store_si128(reinterpret_cast<__m128i*>(ot), F32x8ToBf16(h));
      for (int64_t j = i; j < p.n; ++j) o[j] = ot[j - i];
    }
  }
}

}  // namespace

void SwiGluAvx2(const SwiGluParams& p) {
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
