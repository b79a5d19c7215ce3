// AVX-512 decode of the packed MXFP4 layout (mxfp4_gemm.h) to bf16 pairs, shared by the GEMV /
// GEMV-M (mxfp4_gemm_avx512.cc) and the panel GEMM (mxfp4_panel_gemm_avx512.cc). Include only from
// *_avx512.cc files. Everything here has internal linkage, so no AVX-512 copy can stand in for
// baseline code.
//
// A 64-byte chunk holds 16 rows x 4 k-pairs, row r in dword r: k-pair j's even element in nibble j
// of the dword's low word, its odd element in nibble j of the high word. vpermw looks each word up
// in a 32-word table indexed by the word's low 5 bits (table entry i = bf16(e2m1(i mod 16)), so
// the bit above the nibble does not matter): the word shifted right by 4j gives pair j's element,
// and the two words of a dword form the (even low, odd high) bf16 pair that vdpbf16ps takes.
// 4 vpermw and 3 shifts per 64 bytes, against 12 shuffles for the byte-table decode before it. On
// the Intel host (Emerald Rapids) a vpermw costs about 1.7 vpshufb and vdpbf16ps competes with the
// shuffles far more than with the shifts; a variant with one vpshufb (a byte swap) in place of
// two shifts measured the same in cache and slower in a port microbenchmark.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/bf16.h"
#include "core/e2m1.h"

namespace deepinfer::kernels::avx512 {
namespace {

// Word i = bf16 of the e2m1 value of nibble i mod 16 (sign included).
inline __m512i MakeMxfp4WordTable() {
  alignas(64) uint16_t t[32];
  for (int i = 0; i < 32; ++i) t[i] = FloatToBf16(E2m1ToFloat(static_cast<uint8_t>(i & 0xF)));
  return _mm512_load_si512(t);
}

// One 64-byte chunk -> r[j] lane i = the bf16 pair (even low, odd high) of row i, k-pair j.
inline void DecodeMxfp4Chunk(const uint8_t* chunk, __m512i table, __m512i r[4]) {
  const __m512i v = _mm512_load_si512(chunk);
  r[0] = _mm512_permutexvar_epi16(v, table);
  r[1] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 4), table);
  r[2] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 8), table);
  r[3] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 12), table);
}

// 16 ue8m0 codes -> fp32 2^(code-127); code 0 is the subnormal 2^-127.
inline __m512 Mxfp4RowScales(const uint8_t* codes) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
  const __m512i bits = _mm512_slli_epi32(c, 23);
  return _mm512_castsi512_ps(
      _mm512_mask_mov_epi32(bits, _mm512_testn_epi32_mask(c, c), _mm512_set1_epi32(0x00400000)));
}

}  // namespace
}  // namespace deepinfer::kernels::avx512
