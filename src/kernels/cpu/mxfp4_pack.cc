// Load-time repack of MXFP4 matrices into the panel layout described in mxfp4_gemm.h.
#include <cstring>
#include <string>

#include "core/huge_pages.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"

namespace deepinfer::kernels {

namespace {
constexpr uint8_t kScaleOne = 127;  // ue8m0 code of 1.0, used for padding rows
}

size_t PackedMxfp4Bytes(int64_t n, int64_t k) {
  const int64_t n_panels = (n + kMxfp4PanelRows - 1) / kMxfp4PanelRows;
  return static_cast<size_t>(n_panels * (k / kMxfp4Block) * kMxfp4PanelBlockBytes);
}

Status PackMxfp4Into(std::span<const Mxfp4Source> parts, int64_t k, uint8_t* dst) {
  if (k <= 0 || k % kMxfp4Block != 0) {
    return InvalidArgument("MXFP4 pack: k = " + std::to_string(k) +
                           " is not a positive multiple of 32");
  }
  // Row table of the concatenation: row -> (weight row, scale row).
  int64_t n = 0;
  for (const Mxfp4Source& part : parts) {
    if (part.rows < 0 || (part.rows > 0 && (part.weight == nullptr || part.scale == nullptr))) {
      return InvalidArgument("MXFP4 pack: a part has no data or a negative row count");
    }
    n += part.rows;
  }
  const int64_t n_blocks = k / kMxfp4Block;
  const int64_t row_bytes = k / 2;
  for (const Mxfp4Source& part : parts) {
    for (int64_t i = 0; i < part.rows * n_blocks; ++i) {
      if (part.scale[i] == 0xFF) {
        return InvalidArgument("MXFP4 pack: NaN ue8m0 scale (0xFF) at row " +
                               std::to_string(i / n_blocks) + ", block " +
                               std::to_string(i % n_blocks));
      }
    }
  }
  const PackedMxfp4View view{dst, n, k};
  std::memset(dst, 0, PackedMxfp4Bytes(n, k));
  int64_t row = 0;
  for (const Mxfp4Source& part : parts) {
    for (int64_t pr = 0; pr < part.rows; ++pr, ++row) {
      const int64_t panel = row / kMxfp4PanelRows, r64 = row % kMxfp4PanelRows;
      const int64_t g = r64 / 16, r = r64 % 16;
      const uint8_t* w_row = part.weight + pr * row_bytes;
      const uint8_t* s_row = part.scale + pr * n_blocks;
      for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* blk = const_cast<uint8_t*>(view.panel(panel)) + b * kMxfp4PanelBlockBytes;
        blk[r64] = s_row[b];
        for (int64_t t = 0; t < 4; ++t) {  // step: k-pairs 4t..4t+3 of the block
          const uint32_t dword = Mxfp4ChunkDword(w_row + b * 16 + 4 * t);
          std::memcpy(blk + 64 + (t * 4 + g) * 64 + 4 * r, &dword, 4);  // little-endian x86
        }
      }
    }
  }
  // Padding rows of the last panel: zero weights (memset), scale 1.0.
  for (; row < view.n_panels() * kMxfp4PanelRows; ++row) {
    uint8_t* panel = const_cast<uint8_t*>(view.panel(row / kMxfp4PanelRows));
    for (int64_t b = 0; b < n_blocks; ++b) {
      panel[b * kMxfp4PanelBlockBytes + row % kMxfp4PanelRows] = kScaleOne;
    }
  }
  return Status::Ok();
}

StatusOr<PackedMxfp4Matrix> PackedMxfp4Matrix::Pack(std::span<const Mxfp4Source> parts, int64_t k) {
  int64_t n = 0;
  for (const Mxfp4Source& part : parts) n += part.rows;
  if (k <= 0 || k % kMxfp4Block != 0) {
    return InvalidArgument("MXFP4 pack: k = " + std::to_string(k) +
                           " is not a positive multiple of 32");
  }
  PackedMxfp4Matrix m;
  m.bytes_ = PackedMxfp4Bytes(n, k);
  m.buffer_.reset(static_cast<uint8_t*>(AllocateLarge(m.bytes_)));
  if (!m.buffer_) return Internal("MXFP4 pack: out of memory");
  DI_RETURN_IF_ERROR(PackMxfp4Into(parts, k, m.buffer_.get()));
  m.view_ = PackedMxfp4View{m.buffer_.get(), n, k};
  return m;
}

StatusOr<PackedMxfp4Matrix> PackedMxfp4Matrix::PackFused(const Mxfp4Source& w1,
                                                         const Mxfp4Source& w3, int64_t k) {
  const Mxfp4Source parts[2] = {w1, w3};
  return Pack(parts, k);
}

}  // namespace deepinfer::kernels
