// Philox4x32-10: the counter-based random generator of Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3" (SC'11), checked against the Random123 known-answer vectors.
//
// A counter-based generator is a pure function of (counter, key): the sampler draws its uniform
// for a token from (seed, sample_index, position) alone, so the draw never depends on batch
// neighbours, thread timing, preemption or how many draws came before.
#pragma once

#include <array>
#include <cstdint>

namespace deepinfer::engine {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of the Philox4x32 bijection of `counter` under `key`.
std::array<uint32_t, 4> Philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// The block of four words for one draw site. Layout (fixed: changing it changes every seeded
// completion):
//   key     = {seed low 32 bits, seed high 32 bits}
//   counter = {position low 32, position high 32, sample_index (32 bits), block}
// sample_index must be in [0, 2^32) and position >= 0 (CHECKed).
std::array<uint32_t, 4> PhiloxBlock(uint64_t seed, int64_t sample_index, int64_t position,
                                    uint32_t block);

// A uniform float in [0, 1) with 24 random bits: word (lane % 4) of block (lane / 4).
float PhiloxUniformFloat(uint64_t seed, int64_t sample_index, int64_t position, uint32_t lane);

// A uniform double in [0, 1) with 53 random bits, from words {2*(lane%2), 2*(lane%2)+1} of block
// (lane / 2). The sampler uses lane 0 for its inverse-CDF draw.
double PhiloxUniformDouble(uint64_t seed, int64_t sample_index, int64_t position, uint32_t lane);

}  // namespace deepinfer::engine
