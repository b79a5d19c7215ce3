// AVX2 decode of packed e4m3 weights (fp8_gemm.h layout) to exact fp32 values. Include only from
// *_avx2.cc files.
//
// One 32-byte half of a 64-byte chunk holds 8 rows x 4 k: in 128-bit lane L, rows 4L..4L+3 with
// k (0, 1) in bytes 0-7 and k (2, 3) in bytes 8-15, pairs adjacent (fp8_internal::ChunkPos). The
// decode works on all 32 codes at once, byte-wise, producing the two bytes of each value's bf16
// (every e4m3 value is a bf16 value, so fp32 = bf16 << 16 exactly):
//   hi = A[c >> 4] | B[t],   lo = ((c << 4) & 0xF0) ^ C[t],   t = (c & 0x7F) + 0x70
// A is indexed by (sign, top three exponent bits) and is the whole high byte when the exponent is
// >= 2. t has bit 7 set exactly when the exponent is >= 2, so vpshufb zeroes B[t] and C[t] there;
// for exponents 0 and 1 (zeros, subnormals and the smallest binade) B and C, indexed by
// (exponent bit 0, mantissa), supply the high byte and correct the low byte. Then
// unpacklo/hi_epi8(lo, hi) give one dword per row holding the bf16 pair (k0 | k1 << 16), resp.
// (k2 | k3 << 16); the odd element is `pair & 0xFFFF0000`, the even one `pair << 16`.
// 11 byte operations per 32 codes, no floating-point arithmetic, so fp32 subnormals never appear
// (Zen 1 pays a large penalty for a subnormal multiplicand). Exact for all 254 finite codes; the
// NaN codes 0x7F / 0xFF decode as ±480, so callers route matrices with NaN codes elsewhere
// (PackedFp8Matrix::nan_codes).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/e4m3.h"

namespace deepinfer::kernels::fp8_internal {

struct E4m3LutAvx2 {
  __m256i a, b, c;
};

inline E4m3LutAvx2 LoadE4m3LutAvx2() {
  struct Tables {
    alignas(32) uint8_t a[32], b[32], c[32];
  };
  static const Tables t = [] {
    Tables r{};
    auto bf16_of = [](int code) {
      const float v = E4m3ToFloat(static_cast<uint8_t>(code));
      uint32_t u;
      __builtin_memcpy(&u, &v, 4);
      return u >> 16;
    };
    for (int i = 0; i < 16; ++i) {
      const int sign = i >> 3, e_hi = i & 7;  // A: index = code >> 4
      const uint8_t a = e_hi != 0 ? static_cast<uint8_t>(bf16_of((sign << 7) | (e_hi << 4)) >> 8)
                                  : static_cast<uint8_t>(sign << 7);
      const uint32_t small = bf16_of(i);  // B, C: index = (exponent bit 0, mantissa)
      const uint8_t b = static_cast<uint8_t>(small >> 8);
      const uint8_t c = static_cast<uint8_t>((small & 0xFF) ^ ((i << 4) & 0xF0));
      r.a[i] = r.a[16 + i] = a;
      r.b[i] = r.b[16 + i] = b;
      r.c[i] = r.c[16 + i] = c;
    }
    return r;
  }();
  return {_mm256_load_si256(reinterpret_cast<const __m256i*>(t.a)),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(t.b)),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(t.c))};
}

// 32 codes (one chunk half) -> bf16 pairs of 8 rows: p01 = (k0, k1), p23 = (k2, k3).
inline void DecodeHalfChunk(const E4m3LutAvx2& lut, __m256i c, __m256i& p01, __m256i& p23) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i idx_a = _mm256_and_si256(_mm256_srli_epi16(c, 4), nib);
  const __m256i t =
      _mm256_add_epi8(_mm256_and_si256(c, _mm256_set1_epi8(0x7F)), _mm256_set1_epi8(0x70));
  const __m256i hi =
      _mm256_or_si256(_mm256_shuffle_epi8(lut.a, idx_a), _mm256_shuffle_epi8(lut.b, t));
  const __m256i lo = _mm256_xor_si256(_mm256_andnot_si256(nib, _mm256_slli_epi16(c, 4)),
                                      _mm256_shuffle_epi8(lut.c, t));
  p01 = _mm256_unpacklo_epi8(lo, hi);
  p23 = _mm256_unpackhi_epi8(lo, hi);
}

// The odd (high) and even (low) element of each bf16 pair as fp32.
inline __m256 OddF32(__m256i pair) {
  return _mm256_castsi256_ps(
      _mm256_and_si256(pair, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline __m256 EvenF32(__m256i pair) { return _mm256_castsi256_ps(_mm256_slli_epi32(pair, 16)); }

}  // namespace deepinfer::kernels::fp8_internal
