// AVX-512 helpers shared by the FP8 GEMV and GEMM kernels. Include only from *_avx512.cc files.
//
// Decode of one 64-byte chunk (16 rows x 4 k, permuted as fp8_internal::ChunkPos) to two bf16
// registers R0 = 16 rows x pair (k0, k1) and R1 = 16 rows x pair (k2, k3), one dword per row:
//   hi = vpermi2b(magnitude LUT of bf16 high bytes), lo = vpermi2b(low bytes)  (index bits 0-6)
//   hi |= code & 0x80 (vpternlogd), R0 = unpacklo_epi8(lo, hi), R1 = unpackhi_epi8(lo, hi).
// Exact for all 254 finite codes (subnormals and ±0 included): every e4m3 value is a bf16 value.
//
// The affine decode (the GEMV's, for chunks without special codes, fp8_gemm_internal.h
// IsSpecialCode): for a normal code s eeee mmm the bf16 is s, e + 120 (8 bits), mmm0000, and
// e + 120 is (e3, ~e3, ~e3, ~e3, ~e3, e2, e1, e0) bit for bit (120 + e = 0b01111eee for e < 8,
// 0b10000eee from 8). So both bytes of the bf16 are GF(2)-affine in the code's bits: one
// `vgf2p8affineqb` each (hi: s, e3, ~e3 x4, e2, e1; lo: e0, m2, m1, m0, 0000), then the same
// unpacks. Four instructions instead of the LUT's two 3-uop `vpermi2b`, a ternlog and the
// unpacks: 1.6x the LUT decode's rate from L2 on an Intel Xeon (docs/performance.md).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/e4m3.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

struct E4m3Lut {
  __m512i hi_a, hi_b, lo_a, lo_b, sign;
};

inline const uint8_t* E4m3LutBytes() {
  // [0..127] high bytes, [128..255] low bytes of bf16(e4m3 magnitude code).
  alignas(64) static const auto bytes = [] {
    struct {
      alignas(64) uint8_t b[256];
    } t{};
    for (int c = 0; c < 128; ++c) {
      const float v = E4m3ToFloat(static_cast<uint8_t>(c));
      uint32_t u;
      __builtin_memcpy(&u, &v, 4);
      t.b[c] = static_cast<uint8_t>(u >> 24);
      t.b[128 + c] = static_cast<uint8_t>(u >> 16);
    }
    return t;
  }();
  return bytes.b;
}

inline E4m3Lut LoadE4m3Lut() {
  const uint8_t* t = E4m3LutBytes();
  return {_mm512_load_si512(t), _mm512_load_si512(t + 64), _mm512_load_si512(t + 128),
          _mm512_load_si512(t + 192), _mm512_set1_epi32(static_cast<int>(0x80808080u))};
}

inline void DecodeChunk(const E4m3Lut& lut, __m512i c, __m512i& r0, __m512i& r1) {
  __m512i hi = _mm512_permutex2var_epi8(lut.hi_a, c, lut.hi_b);
  const __m512i lo = _mm512_permutex2var_epi8(lut.lo_a, c, lut.lo_b);
  hi = _mm512_ternarylogic_epi32(hi, c, lut.sign, 0xF8);  // hi | (c & 0x80)
  r0 = _mm512_unpacklo_epi8(lo, hi);
  r1 = _mm512_unpackhi_epi8(lo, hi);
}

// The two 8x8 bit matrices of the affine decode (row for output bit i in byte 7 - i; row bit j
// selects input bit j) and the constant of the high byte (the ~e3 bits: 0b00111100).
struct E4m3Affine {
  __m512i hi, lo;
};
inline constexpr int kE4m3AffineHiConst = 0x3C;

inline E4m3Affine LoadE4m3Affine() {
  // Input bit of each output bit 7..0 (-1: constant only).
  constexpr int kHiSource[8] = {7, 6, 6, 6, 6, 6, 5, 4};
  constexpr int kLoSource[8] = {3, 2, 1, 0, -1, -1, -1, -1};
  auto matrix = [](const int* source) {
    uint64_t m = 0;
    for (int bit = 7, i = 0; bit >= 0; --bit, ++i) {
      if (source[i] >= 0) m |= uint64_t{1} << (8 * (7 - bit) + source[i]);
    }
    return static_cast<long long>(m);
  };
  return {_mm512_set1_epi64(matrix(kHiSource)), _mm512_set1_epi64(matrix(kLoSource))};
}

// DecodeChunk for a chunk without special codes (exact there; wrong for ±0, subnormals, NaN).
inline void DecodeChunkAffine(const E4m3Affine& aff, __m512i c, __m512i& r0, __m512i& r1) {
  const __m512i hi = _mm512_gf2p8affine_epi64_epi8(c, aff.hi, kE4m3AffineHiConst);
  const __m512i lo = _mm512_gf2p8affine_epi64_epi8(c, aff.lo, 0);
  r0 = _mm512_unpacklo_epi8(lo, hi);
  r1 = _mm512_unpackhi_epi8(lo, hi);
}

inline __m512 Dp(__m512 acc, __m512i w, __m512i x) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(w), reinterpret_cast<__m512bh&>(x));
}

// Stores lanes [0, count) of v to row `row`, columns [col, col + count), count <= 16.
inline void StoreRow16(const OutView& out, int64_t row, int64_t col, __m512 v, int64_t count) {
  const __mmask16 mask = count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
  if (out.dtype == OutDtype::kF32) {
    _mm512_mask_storeu_ps(static_cast<float*>(out.data) + row * out.ld + col, mask, v);
  } else {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out.data) + row * out.ld + col, mask,
                             F32x16ToBf16(v));  // bf16_avx512.h: RNE, subnormals kept
  }
}

}  // namespace deepinfer::kernels::fp8_internal
