// AVX2 fallback of the MXFP4 kernels: the AVX-512 decode on 128-bit lanes (8 rows × 4 k-pairs
// per 32 bytes), then each bf16 pair as two fp32 FMAs, odd element first. For quantizer
// activations every product is exact and normal, so this equals the vdpbf16ps order bit for bit.
// One activation row at a time (a fallback: correctness over speed).
#include <immintrin.h>

#include <algorithm>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels {

namespace {

struct Lut {
  __m256i low, high, nibble_mask;
};

Lut MakeLut() {
  const E2m1Bf16ByteTables t = MakeE2m1Bf16ByteTables();
  return Lut{_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.low))),
             _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.high))),
             _mm256_set1_epi8(0x0F)};
}

// 32 bytes (8 rows × 4 k-pairs) -> r[j] lane i = bf16 pair of row i, k-pair j.
inline void DecodeHalfChunk(const uint8_t* p, const Lut& lut, __m256i r[4]) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i lo = _mm256_and_si256(v, lut.nibble_mask);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lut.nibble_mask);
  const __m256i even_l = _mm256_shuffle_epi8(lut.low, lo),
                even_h = _mm256_shuffle_epi8(lut.high, lo);
  const __m256i odd_l = _mm256_shuffle_epi8(lut.low, hi), odd_h = _mm256_shuffle_epi8(lut.high, hi);
  const __m256i even0 = _mm256_unpacklo_epi8(even_l, even_h),
                even1 = _mm256_unpackhi_epi8(even_l, even_h);
  const __m256i odd0 = _mm256_unpacklo_epi8(odd_l, odd_h),
                odd1 = _mm256_unpackhi_epi8(odd_l, odd_h);
  r[0] = _mm256_unpacklo_epi16(even0, odd0);
  r[1] = _mm256_unpackhi_epi16(even0, odd0);
  r[2] = _mm256_unpacklo_epi16(even1, odd1);
  r[3] = _mm256_unpackhi_epi16(even1, odd1);
}

inline __m256 RowScales8(const uint8_t* codes) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
  const __m256i bits = _mm256_slli_epi32(c, 23);
  const __m256i is_zero = _mm256_cmpeq_epi32(c, _mm256_setzero_si256());
  return _mm256_castsi256_ps(_mm256_blendv_epi8(bits, _mm256_set1_epi32(0x00400000), is_zero));
}

// tot[0..63] for one activation row x against one panel.
void GemvPanel(const uint8_t* panel, int64_t n_blocks, const uint16_t* x, const Lut& lut,
               float* tot) {
  const __m256i odd_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int h = 0; h < 8; ++h) {  // 8-row slice: group h/2, half h%2 of its chunks
    __m256 total = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = panel + b * kMxfp4PanelBlockBytes;
      __m256 acc = _mm256_setzero_ps();
      for (int t = 0; t < 4; ++t) {
        __m256i r[4];
        DecodeHalfChunk(blk + 64 + (t * 4 + h / 2) * 64 + (h % 2) * 32, lut, r);
        for (int j = 0; j < 4; ++j) {
          const int64_t k = (b * 16 + 4 * t + j) * 2;
          const __m256 x_even = _mm256_set1_ps(Bf16ToFloat(x[k]));
          const __m256 x_odd = _mm256_set1_ps(Bf16ToFloat(x[k + 1]));
          const __m256 w_odd = _mm256_castsi256_ps(_mm256_and_si256(r[j], odd_mask));
          const __m256 w_even = _mm256_castsi256_ps(_mm256_slli_epi32(r[j], 16));
          acc = _mm256_fmadd_ps(w_odd, x_odd, acc);
          acc = _mm256_fmadd_ps(w_even, x_even, acc);
        }
      }
      total = _mm256_fmadd_ps(acc, RowScales8(blk + 8 * h), total);
    }
    _mm256_storeu_ps(tot + 8 * h, total);
  }
}

}  // namespace

void Mxfp4PanelsAvx2(const Mxfp4Call& c, int64_t p_begin, int64_t p_end) {
  const Lut lut = MakeLut();
  alignas(32) float tot[64];
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t n0 = p * kMxfp4PanelRows;
    const int64_t valid = std::min<int64_t>(kMxfp4PanelRows, c.w.n - n0);
    for (int64_t m = 0; m < c.n_rows; ++m) {
      GemvPanel(c.w.panel(p), c.w.n_blocks(), c.xq + m * c.ldx, lut, tot);
      for (int64_t r = 0; r < valid; ++r) {
        if (c.out_dtype == DType::kF32) {
          static_cast<float*>(c.out)[m * c.ldo + n0 + r] = tot[r];
        } else {
          static_cast<uint16_t*>(c.out)[m * c.ldo + n0 + r] = FloatToBf16(tot[r]);
        }
      }
    }
  }
}

}  // namespace deepinfer::kernels
