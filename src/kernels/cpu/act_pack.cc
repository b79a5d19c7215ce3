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
  // Blocks of kPairBlock pairs so that the strided writes of each row stay in one L1-resident
  // piece of out (a row-at-a-time pass over the whole tile missed L1 on every write at K = 5120).
  constexpr int64_t kPairBlock = 64;
  const int64_t pairs = k / 2;
  for (int64_t j0 = 0; j0 < pairs; j0 += kPairBlock) {
    const int64_t j1 = j0 + kPairBlock < pairs ? j0 + kPairBlock : pairs;
    for (int64_t r = 0; r < tile_rows; ++r) {
      uint32_t* o = out + r;
      if (r < m) {
        const uint16_t* row = xq + r * ldx;
        for (int64_t j = j0; j < j1; ++j) o[j * tile_rows] = PairAt(row, j);
      } else {
        for (int64_t j = j0; j < j1; ++j) o[j * tile_rows] = 0;
      }
    }
  }
}

}  // namespace deepinfer::kernels
