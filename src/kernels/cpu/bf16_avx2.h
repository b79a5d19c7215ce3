// bf16 <-> fp32 on 8 AVX2 lanes, the same rules as core/bf16.h (RNE: u + 0x7FFF + ((u >> 16) & 1);
// NaN -> (u >> 16) | 0x40). Include only from *_avx2.cc files.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace deepinfer::kernels {

inline __m256 LoadBf16x8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Each lane rounded to bf16, kept in the high 16 bits of the dword (low 16 bits zero).
inline __m256i F32x8ToBf16Dwords(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m256i rounded = _mm256_and_si256(
      _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), hi_mask);
  const __m256i quiet =
      _mm256_or_si256(_mm256_and_si256(u, hi_mask), _mm256_set1_epi32(0x00400000));
  const __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
  return _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan));
}

// Rounds each lane to the nearest bf16 value (the result stays fp32), as RoundToBf16.
inline __m256 RoundToBf16x8(__m256 f) { return _mm256_castsi256_ps(F32x8ToBf16Dwords(f)); }

// The 8 lanes rounded to bf16, packed into 8 uint16 (lane order kept).
inline __m128i F32x8ToBf16(__m256 f) {
  const __m256i hi = _mm256_srli_epi32(F32x8ToBf16Dwords(f), 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
}

}  // namespace deepinfer::kernels
