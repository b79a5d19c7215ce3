// AVX2 decode of the packed MXFP4 layout (mxfp4_gemm.h) to fp32 weights, shared by the AVX2 GEMV
// (mxfp4_gemm_avx2.cc) and panel GEMM (mxfp4_panel_gemm_avx2.cc). Include only from *_avx2.cc
// files. Everything here has internal linkage, so no AVX2 copy can stand in for baseline code.
//
// A 64-byte chunk holds 16 rows x 4 k-pairs, row r in dword r (the even elements of the pairs in
// the low word's nibbles, the odd ones in the high word's); its first / second 32 bytes are rows
// 0-7 / 8-15. One vpshufb per 128-bit lane (4 rows) gathers byte q of the 4 rows' dwords into
// bytes 4q..4q+3: the low nibbles then hold (even pair 0, even pair 2, odd pair 0, odd pair 2) x 4
// rows and the high nibbles the same for pairs 1 and 3, so the byte-table decode of the old
// layout and its byte / word unpacks give the (even, odd) bf16 pairs. The nibbles go through the
// vpshufb bf16 tables of mxfp4_gemm_kernels.h, so every decoded weight is the exact e2m1 value.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels::avx2 {
namespace {

struct Mxfp4Lut {
  __m256i low, high, nibble_mask, odd_mask, gather_bytes;
};

inline Mxfp4Lut MakeMxfp4Lut() {
  const E2m1Bf16ByteTables t = MakeE2m1Bf16ByteTables();
  return Mxfp4Lut{
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.low))),
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.high))),
      _mm256_set1_epi8(0x0F), _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)),
      _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9,
                       13, 2, 6, 10, 14, 3, 7, 11, 15)};
}

// 32 bytes (8 rows x 4 k-pairs) -> r[j] lane i = the bf16 pair (even low, odd high) of row i,
// k-pair j.
inline void DecodeHalfChunkPairs(const uint8_t* p, const Mxfp4Lut& lut, __m256i r[4]) {
  const __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                        lut.gather_bytes);
  const __m256i lo = _mm256_and_si256(v, lut.nibble_mask);                        // pairs 0 and 2
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lut.nibble_mask);  // 1 and 3
  const __m256i lo_l = _mm256_shuffle_epi8(lut.low, lo);
  const __m256i lo_h = _mm256_shuffle_epi8(lut.high, lo);
  const __m256i hi_l = _mm256_shuffle_epi8(lut.low, hi);
  const __m256i hi_h = _mm256_shuffle_epi8(lut.high, hi);
  const __m256i even02 = _mm256_unpacklo_epi8(lo_l, lo_h);  // words: pair 0 rows 0-3, pair 2
  const __m256i odd02 = _mm256_unpackhi_epi8(lo_l, lo_h);
  const __m256i even13 = _mm256_unpacklo_epi8(hi_l, hi_h);
  const __m256i odd13 = _mm256_unpackhi_epi8(hi_l, hi_h);
  r[0] = _mm256_unpacklo_epi16(even02, odd02);
  r[1] = _mm256_unpacklo_epi16(even13, odd13);
  r[2] = _mm256_unpackhi_epi16(even02, odd02);
  r[3] = _mm256_unpackhi_epi16(even13, odd13);
}

// The fp32 weights of a pair register: odd element (high half) and even element (low half).
inline __m256 OddF32(__m256i pair, const Mxfp4Lut& lut) {
  return _mm256_castsi256_ps(_mm256_and_si256(pair, lut.odd_mask));
}
inline __m256 EvenF32(__m256i pair) { return _mm256_castsi256_ps(_mm256_slli_epi32(pair, 16)); }

// 32 bytes (8 rows x 4 k-pairs) -> w[2j] = the 8 rows' odd weight of pair j, w[2j + 1] = their
// even weight: the order in which the numerics contract consumes them (odd element first).
inline void DecodeHalfChunkF32(const uint8_t* p, const Mxfp4Lut& lut, __m256 w[8]) {
  __m256i r[4];
  DecodeHalfChunkPairs(p, lut, r);
  for (int j = 0; j < 4; ++j) {
    w[2 * j] = OddF32(r[j], lut);
    w[2 * j + 1] = EvenF32(r[j]);
  }
}

// 8 ue8m0 codes -> fp32 2^(code - 127); code 0 is the subnormal 2^-127.
inline __m256 RowScales8(const uint8_t* codes) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
  const __m256i bits = _mm256_slli_epi32(c, 23);
  const __m256i is_zero = _mm256_cmpeq_epi32(c, _mm256_setzero_si256());
  return _mm256_castsi256_ps(_mm256_blendv_epi8(bits, _mm256_set1_epi32(0x00400000), is_zero));
}

}  // namespace
}  // namespace deepinfer::kernels::avx2
