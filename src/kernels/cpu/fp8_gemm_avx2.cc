// AVX2 + FMA FP8 GEMM path: the scalar path's structure (decode each panel-block once to fp32,
// then every row over it) with 8 independent ymm accumulator chains per row. fma(x, w, acc) with
// an exact product rounds exactly like the `vdpbf16ps` step, so results match bit for bit.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

namespace {
inline __m256 Bcast(uint16_t bf16) {
  return _mm256_castsi256_ps(
      _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(bf16) << 16)));
}
}  // namespace

void Fp8GemmAvx2(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                 const OutView& out, ThreadPool& pool) {
  const int64_t kb = w.k_blocks();
  pool.ParallelFor(w.n_panels, 1, [&](int64_t p0, int64_t p1) {
    thread_local AlignedBuffer<float> wf, tot;
    wf.EnsureSize(kFp8BlockK * kFp8PanelRows);
    tot.EnsureSize(static_cast<size_t>(m * kFp8PanelRows));
    for (int64_t p = p0; p < p1; ++p) {
      const uint8_t* codes = w.PanelCodes(p);
      const float* sc = w.PanelScales(p);
      std::fill(tot.data(), tot.data() + m * kFp8PanelRows, 0.0f);
      for (int64_t b = 0; b < kb; ++b) {
        DecodePanelBlockF32(codes + b * kFp8BlockBytes, wf.data());
        const __m256 s0 = _mm256_set1_ps(sc[b * 2]), s1 = _mm256_set1_ps(sc[b * 2 + 1]);
        for (int64_t i = 0; i < m; ++i) {
          const uint16_t* x = xq + i * ldx + b * kFp8BlockK;
          __m256 acc[8];
          for (int q = 0; q < 8; ++q) acc[q] = _mm256_setzero_ps();
          for (int j = 0; j < 16; ++j) {
            const __m256 x0 = Bcast(x[2 * j]), x1 = Bcast(x[2 * j + 1]);
            const float* w0 = wf.data() + (2 * j) * kFp8PanelRows;
            const float* w1 = w0 + kFp8PanelRows;
            for (int q = 0; q < 8; ++q) {
              acc[q] = _mm256_fmadd_ps(x1, _mm256_load_ps(w1 + 8 * q), acc[q]);
              acc[q] = _mm256_fmadd_ps(x0, _mm256_load_ps(w0 + 8 * q), acc[q]);
            }
          }
          float* t = tot.data() + i * kFp8PanelRows;
          for (int q = 0; q < 8; ++q) {
            _mm256_store_ps(t + 8 * q,
                            _mm256_fmadd_ps(acc[q], q < 4 ? s0 : s1, _mm256_load_ps(t + 8 * q)));
          }
        }
      }
      const int64_t n_valid = std::min<int64_t>(kFp8PanelRows, w.n - p * kFp8PanelRows);
      for (int64_t i = 0; i < m; ++i) {
        StoreRowScalar(out, i, p * kFp8PanelRows, tot.data() + i * kFp8PanelRows, n_valid);
      }
    }
  });
}

}  // namespace deepinfer::kernels::fp8_internal
