// AVX-512 stores of 16 fp32 results as fp32 or bf16, with a row mask for N tails.
// Included only by *_avx512.cc files (needs the AVX-512 compile flags).
//
// The bf16 conversion (bf16_avx512.h) is integer RNE with NaN quieting, bit-identical to
// FloatToBf16 for every input. vcvtneps2bf16 is not used: it flushes subnormal inputs to zero, and
// a total scaled by 2^-127 can be subnormal.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/bf16_avx512.h"

namespace deepinfer::kernels::avx512 {

// Stores lanes of v selected by mask to out (element index `index` of a row of out_dtype).
inline void StoreOut(__m512 v, __mmask16 mask, void* out, int64_t index, DType out_dtype) {
  if (out_dtype == DType::kF32) {
    _mm512_mask_storeu_ps(static_cast<float*>(out) + index, mask, v);
  } else {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out) + index, mask, F32x16ToBf16(v));
  }
}

// Mask of the first `valid` of 16 lanes (valid may be <= 0 or >= 16).
inline __mmask16 TailMask(int64_t valid) {
  if (valid >= 16) return 0xFFFF;
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1);
}

}  // namespace deepinfer::kernels::avx512
