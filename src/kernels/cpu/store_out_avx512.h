// AVX-512 stores of 16 fp32 results as fp32 or bf16, with a row mask for N tails.
// Included only by *_avx512.cc files (needs the AVX-512 compile flags).
//
// The bf16 conversion is integer RNE with NaN quieting, bit-identical to FloatToBf16 (core/bf16.h)
// for every input. vcvtneps2bf16 is not used: it flushes subnormal inputs to zero, and a total
// scaled by 2^-127 can be subnormal.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"

namespace deepinfer::kernels::avx512 {

inline __m256i Bf16RneFromF32(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x0040));
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
}

// Stores lanes of v selected by mask to out (element index `index` of a row of out_dtype).
inline void StoreOut(__m512 v, __mmask16 mask, void* out, int64_t index, DType out_dtype) {
  if (out_dtype == DType::kF32) {
    _mm512_mask_storeu_ps(static_cast<float*>(out) + index, mask, v);
  } else {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out) + index, mask, Bf16RneFromF32(v));
  }
}

// Mask of the first `valid` of 16 lanes (valid may be <= 0 or >= 16).
inline __mmask16 TailMask(int64_t valid) {
  if (valid >= 16) return 0xFFFF;
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1);
}

}  // namespace deepinfer::kernels::avx512
