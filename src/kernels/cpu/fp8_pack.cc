// Load-time repack of a dense FP8 matrix into the streamed panel layout (see fp8_gemm.h).
#include <cstring>
#include <string>

#include "core/ue8m0.h"
#include "kernels/cpu/fp8_gemm.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels {

StatusOr<PackedFp8Matrix> PackFp8Matrix(const uint8_t* codes, const uint8_t* scales, int64_t n,
                                        int64_t k) {
  if (codes == nullptr || scales == nullptr) return InvalidArgument("PackFp8Matrix: null input");
  if (n <= 0 || k <= 0 || k % kFp8BlockK != 0) {
    return InvalidArgument("PackFp8Matrix: need n > 0 and k a positive multiple of 32, got n=" +
                           std::to_string(n) + " k=" + std::to_string(k));
  }
  const int64_t kb = k / kFp8BlockK;
  const int64_t scale_rows = (n + 31) / 32;
  for (int64_t i = 0; i < scale_rows * kb; ++i) {
    if (scales[i] == 0xFF) {
      return InvalidArgument("PackFp8Matrix: NaN ue8m0 scale at tile (" + std::to_string(i / kb) +
                             ", " + std::to_string(i % kb) + ")");
    }
  }
  PackedFp8Matrix w;
  w.n = n;
  w.k = k;
  w.n_panels = (n + kFp8PanelRows - 1) / kFp8PanelRows;
  w.codes.EnsureSize(static_cast<size_t>(w.n_panels * kb * kFp8BlockBytes));
  w.scales.EnsureSize(static_cast<size_t>(w.n_panels * kb * 2));
  w.special_chunks.EnsureSize(static_cast<size_t>(w.n_panels * kb));
  bool nan_codes = false;
  for (int64_t i = 0; i < n * k; ++i) nan_codes |= (codes[i] & 0x7F) == 0x7F;
  w.nan_codes = nan_codes;
  for (int64_t p = 0; p < w.n_panels; ++p) {
    for (int64_t b = 0; b < kb; ++b) {
      uint8_t* blk = w.codes.data() + (p * kb + b) * kFp8BlockBytes;
      uint32_t special = 0;
      for (int s = 0; s < 8; ++s) {
        for (int g = 0; g < 4; ++g) {
          uint8_t* chunk = blk + (s * 4 + g) * kFp8ChunkBytes;
          for (int r = 0; r < 16; ++r) {
            const int64_t row = p * kFp8PanelRows + g * 16 + r;
            for (int kk = 0; kk < 4; ++kk) {
              const int64_t col = b * kFp8BlockK + s * 4 + kk;
              const uint8_t code = row < n ? codes[row * k + col] : 0;
              chunk[fp8_internal::ChunkPos(r, kk)] = code;
              if (fp8_internal::IsSpecialCode(code)) special |= 1u << (s * 4 + g);
            }
          }
        }
      }
      w.special_chunks[p * kb + b] = special;
      for (int h = 0; h < 2; ++h) {
        const int64_t tile_row = p * 2 + h;  // 32-row tile index
        w.scales[(p * kb + b) * 2 + h] =
            tile_row < scale_rows ? Ue8m0ToFloat(scales[tile_row * kb + b]) : 1.0f;
      }
    }
  }
  return w;
}

}  // namespace deepinfer::kernels
