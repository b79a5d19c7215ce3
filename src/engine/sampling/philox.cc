#include "engine/sampling/philox.h"

#include "core/check.h"

namespace deepinfer::engine {
namespace {

// Multipliers and Weyl key increments of Philox4x32 (Salmon et al., table 2).
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule advances between rounds
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

std::array<uint32_t, 4> PhiloxBlock(uint64_t seed, int64_t sample_index, int64_t position,
                                    uint32_t block) {
  CHECK(sample_index >= 0 && sample_index <= int64_t{0xFFFFFFFF})
      << "sample_index " << sample_index << " outside [0, 2^32)";
  CHECK(position >= 0) << "position " << position;
  const auto pos = static_cast<uint64_t>(position);
  return Philox4x32_10({static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32),
                        static_cast<uint32_t>(sample_index), block},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

float PhiloxUniformFloat(uint64_t seed, int64_t sample_index, int64_t position, uint32_t lane) {
  const uint32_t word = PhiloxBlock(seed, sample_index, position, lane / 4)[lane % 4];
  return static_cast<float>(word >> 8) * 0x1.0p-24f;  // exact: 24 bits fit the mantissa
}

double PhiloxUniformDouble(uint64_t seed, int64_t sample_index, int64_t position, uint32_t lane) {
  const auto words = PhiloxBlock(seed, sample_index, position, lane / 2);
  const uint32_t first = 2 * (lane % 2);
  const uint64_t bits =
      (static_cast<uint64_t>(words[first]) << 32 | words[first + 1]) >> 11;  // 53 bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace deepinfer::engine
