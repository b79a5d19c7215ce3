// Portable FP8 GEMM path (no SIMD assumptions) and the helpers it shares with the AVX2 path.
// Per panel: decode each 2 KiB panel-block once to fp32, then run every activation row over it in
// the canonical order (fp8_gemm.h). Products are exact, so plain `acc + x*w` equals the
// `vdpbf16ps` step bit for bit.
#include <array>
#include <cmath>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels::fp8_internal {

namespace {
const std::array<float, 256>& E4m3Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = E4m3ToFloat(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}
}  // namespace

void DecodePanelBlockF32(const uint8_t* block, float* wf) {
  const std::array<float, 256>& table = E4m3Table();
  for (int s = 0; s < 8; ++s) {
    for (int g = 0; g < 4; ++g) {
      const uint8_t* chunk = block + (s * 4 + g) * kFp8ChunkBytes;
      for (int kk = 0; kk < 4; ++kk) {
        float* dst = wf + (s * 4 + kk) * kFp8PanelRows + g * 16;
        for (int r = 0; r < 16; ++r) dst[r] = table[chunk[ChunkPos(r, kk)]];
      }
    }
  }
}

void StoreRowScalar(const OutView& out, int64_t row, int64_t col, const float* v, int64_t count) {
  if (out.dtype == OutDtype::kF32) {
    float* dst = static_cast<float*>(out.data) + row * out.ld + col;
    for (int64_t i = 0; i < count; ++i) dst[i] = v[i];
  } else {
    uint16_t* dst = static_cast<uint16_t*>(out.data) + row * out.ld + col;
    for (int64_t i = 0; i < count; ++i) dst[i] = FloatToBf16(v[i]);
  }
}

void Fp8GemmScalar(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                   const OutView& out, ThreadPool& pool) {
  const int64_t kb = w.k_blocks();
  pool.ParallelFor(w.n_panels, 1, [&](int64_t p0, int64_t p1) {
    thread_local AlignedBuffer<float> wf, tot;
    wf.EnsureSize(kFp8BlockK * kFp8PanelRows);
    tot.EnsureSize(static_cast<size_t>(m * kFp8PanelRows));
    for (int64_t p = p0; p < p1; ++p) {
      const uint8_t* codes = w.PanelCodes(p);
      const float* sc = w.PanelScales(p);
      for (int64_t i = 0; i < m * kFp8PanelRows; ++i) tot[i] = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        DecodePanelBlockF32(codes + b * kFp8BlockBytes, wf.data());
        for (int64_t i = 0; i < m; ++i) {
          const uint16_t* x = xq + i * ldx + b * kFp8BlockK;
          float acc[kFp8PanelRows] = {};
          for (int j = 0; j < 16; ++j) {
            const float x0 = Bf16ToFloat(x[2 * j]), x1 = Bf16ToFloat(x[2 * j + 1]);
            const float* w0 = wf.data() + (2 * j) * kFp8PanelRows;
            const float* w1 = w0 + kFp8PanelRows;
            for (int r = 0; r < kFp8PanelRows; ++r) {
              acc[r] += x1 * w1[r];
              acc[r] += x0 * w0[r];
            }
          }
          float* t = tot.data() + i * kFp8PanelRows;
          for (int r = 0; r < kFp8PanelRows; ++r) t[r] = std::fma(acc[r], sc[b * 2 + r / 32], t[r]);
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
