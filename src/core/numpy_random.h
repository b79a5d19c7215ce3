// Bit-exact re-implementation of the parts of numpy's random module (as of numpy 1.24) that model
// constants are derived from: `np.random.default_rng(seed).integers(low, high, size,
// dtype=np.int64)`. DeepSeek-V4.1's Engram hash multipliers come from exactly that call, so any
// deviation would silently rehash the whole Engram table.
//
// The chain is SeedSequence(seed) -> PCG64 -> Generator:
//   * SeedSequence: the seed's 32-bit words are hashed into a 4-word pool; generate_state hashes
//     the pool cyclically into as many 32-bit words as asked (pairs form little-endian uint64).
//   * PCG64: a 128-bit LCG with the XSL-RR output function; seeded from generate_state(4, uint64)
//     as state = w0:w1, increment = w2:w3 (high:low). 32-bit draws use one half of a 64-bit
//     draw (low half first) and keep the other half buffered in the generator.
//   * Generator.integers (endpoint=False): range r = high - low - 1; r == 0 -> low; r < 2^32 -> a
//     32-bit Lemire draw (r == 2^32-1: a raw 32-bit draw); otherwise a 64-bit Lemire draw. numpy's
//     Generator uses Lemire's method (not the masked rejection of the legacy RandomState).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer {

__extension__ typedef unsigned __int128 Uint128;

// numpy.random.SeedSequence with an integer entropy, no spawn key, pool size 4.
class SeedSequence {
 public:
  static constexpr int kPoolSize = 4;

  // SeedSequence(seed) for a non-negative seed < 2^64.
  explicit SeedSequence(uint64_t seed);
  // SeedSequence(entropy) for an arbitrary non-negative integer given as its little-endian 32-bit
  // words, split the way numpy splits it: no trailing zero words, and [0] for zero (an empty
  // span gives the same pool).
  explicit SeedSequence(std::span<const uint32_t> entropy_words);

  const std::array<uint32_t, kPoolSize>& pool() const { return pool_; }
  // generate_state(n_words, np.uint32).
  std::vector<uint32_t> GenerateState32(size_t n_words) const;
  // generate_state(n_words, np.uint64): word i = lo | hi << 32 of 32-bit words 2i, 2i+1.
  std::vector<uint64_t> GenerateState64(size_t n_words) const;

 private:
  std::array<uint32_t, kPoolSize> pool_{};
};

// numpy.random.PCG64 (the 128-bit "setseq" XSL-RR generator numpy ships).
class Pcg64 {
 public:
  // PCG64(seed_seq): seeded from seed_seq.generate_state(4, np.uint64).
  explicit Pcg64(const SeedSequence& seed_seq);
  // pcg64_srandom(initstate, initseq) as in the PCG reference.
  Pcg64(Uint128 initstate, Uint128 initseq);

  // random_raw(): advance, then output XSL-RR of the new state.
  uint64_t NextUint64();
  // next_uint32: the low half of a fresh 64-bit draw, the high half the next time.
  uint32_t NextUint32();

  Uint128 state() const { return state_; }
  Uint128 increment() const { return inc_; }

 private:
  void Step();

  Uint128 state_ = 0;
  Uint128 inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

// numpy.random.Generator(PCG64(...)) restricted to int64 integers.
class NumpyGenerator {
 public:
  // np.random.default_rng(seed).
  explicit NumpyGenerator(uint64_t seed);
  explicit NumpyGenerator(const SeedSequence& seed_seq) : bit_gen_(seed_seq) {}

  // integers(low, high, size, dtype=np.int64) with endpoint=False. Requires low < high (numpy
  // raises ValueError otherwise; here it is a CHECK: callers pass constants).
  std::vector<int64_t> Integers(int64_t low, int64_t high, size_t size);
  // One value of off + [0, rng] as numpy's random_bounded_uint64_fill draws it (rng inclusive).
  uint64_t BoundedUint64(uint64_t off, uint64_t rng);

  Pcg64& bit_generator() { return bit_gen_; }

 private:
  uint32_t BoundedLemire32(uint32_t rng);
  uint64_t BoundedLemire64(uint64_t rng);

  Pcg64 bit_gen_;
};

}  // namespace deepinfer
