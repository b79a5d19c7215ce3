#include "kernels/cpu/act_pack.h"

#include <cstring>

namespace deepinfer::kernels {

namespace {
inline uint32_t PairAt(const uint16_t* row, int64_t j) {
  uint32_t v;
  std::memcpy(&v, row + 2 * j, 4);  // little-endian: low half = element 2j
  return v;
}
}  // namespace

void PackActPairs(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, uint32_t* out) {
  const int64_t pairs = k / 2;
  for (int64_t r = 0; r < m; ++r) {
    const uint16_t* row = xq + r * ldx;
    for (int64_t j = 0; j < pairs; ++j) out[j * m + r] = PairAt(row, j);
  }
}

void PackActTile(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, int tile_rows,
                 uint32_t* out) {
  const int64_t pairs = k / 2;
  for (int64_t r = 0; r < tile_rows; ++r) {
    if (r < m) {
      const uint16_t* row = xq + r * ldx;
      for (int64_t j = 0; j < pairs; ++j) out[j * tile_rows + r] = PairAt(row, j);
    } else {
      for (int64_t j = 0; j < pairs; ++j) out[j * tile_rows + r] = 0;
    }
  }
}

}  // namespace deepinfer::kernels
