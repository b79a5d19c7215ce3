// bf16 <-> fp32 conversions for 16 lanes, bit-identical to core/bf16.h (round to nearest even,
// NaN kept quiet). Include only from *_avx512.cc files.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace deepinfer::kernels {

inline __m512 Bf16x16ToF32(__m256i b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

inline __m512 LoadBf16x16(const uint16_t* p) {
  return Bf16x16ToF32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512 MaskLoadBf16x16(const uint16_t* p, __mmask16 m) {
  return Bf16x16ToF32(_mm256_maskz_loadu_epi16(m, p));
}

// Same rule as FloatToBf16: u + 0x7FFF + ((u >> 16) & 1), NaN -> (u >> 16) | 0x40.
inline __m256i F32x16ToBf16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
}

}  // namespace deepinfer::kernels

namespace deepinfer::kernels {

// Rounds each fp32 lane to the nearest bf16 value (result stays fp32), as RoundToBf16.
inline __m512 RoundToBf16x16(__m512 f) { return Bf16x16ToF32(F32x16ToBf16(f)); }

}  // namespace deepinfer::kernels
