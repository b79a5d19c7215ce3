// SplitMix64 (Steele, Lea & Flood; the form Vigna gives for seeding xoshiro): one step of the
// Weyl sequence plus its finaliser. A bijection of the 64-bit words, so distinct inputs give
// distinct outputs; fast and stateless, for seeds and for filling memory with unequal words.
#pragma once

#include <cstdint>

namespace deepinfer {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace deepinfer
