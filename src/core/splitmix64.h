// SplitMix64 (Steele, Lea & Flood; the form Vigna gives for seeding xoshiro): one step of the
// Weyl sequence plus its finaliser. A bijection of the 64-bit words, so distinct inputs give
// distinct outputs; fast and stateless, for seeds and for filling memory with unequal words.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace deepinfer {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A seed for one member of a family (a benchmark configuration, a sweep point): `seed` mixed with
// each value in turn, so members that differ in any value draw unrelated streams.
inline uint64_t MixSeed(uint64_t seed, std::initializer_list<int64_t> values) {
  for (const int64_t v : values) seed = SplitMix64(seed ^ static_cast<uint64_t>(v));
  return seed;
}

}  // namespace deepinfer
