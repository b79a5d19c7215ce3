// 16x16 transpose of 32-bit elements held in 16 zmm registers (fp32 or bf16 pairs: the bits move,
// nothing is converted). Include only from *_avx512.cc files.
#pragma once

#include <immintrin.h>

namespace deepinfer::kernels {

// r[i] holds row i (16 lanes); on return r[i] holds column i.
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
  // Pairs of rows interleaved inside each 128-bit lane.
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // Groups of four rows: u[4g + k] holds rows 4g..4g+3 of columns k, k+4, k+8, k+12 (one per
  // 128-bit lane).
  for (int g = 0; g < 4; ++g) {
    const __m512 a = t[4 * g], b = t[4 * g + 1], c = t[4 * g + 2], d = t[4 * g + 3];
    u[4 * g + 0] = _mm512_shuffle_ps(a, c, 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(a, c, 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(b, d, 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(b, d, 0xEE);
  }
  // 128-bit lanes: column k (lane 0), k+4 (lane 1), k+8 (lane 2), k+12 (lane 3) of u[4g + k].
  for (int k = 0; k < 4; ++k) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);       // cols k, k+8 of rows 0-7
    const __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);       // cols k+4, k+12
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);  // rows 8-15
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
    r[k] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[k + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

}  // namespace deepinfer::kernels
