#include "core/numpy_random.h"

#include "core/check.h"

namespace deepinfer {
namespace {

// SeedSequence hashing constants (numpy/random/bit_generator.pyx).
constexpr uint32_t kInitA = 0x43b0d7e5;
constexpr uint32_t kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd;
constexpr uint32_t kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd;
constexpr uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;  // 32-bit words / 2

// All arithmetic below is modulo 2^32 (uint32 wrap-around), as numpy's uint32 arrays do it.
uint32_t HashMix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t Mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// PCG's default 128-bit multiplier.
constexpr Uint128 kPcgMultiplier =
    (static_cast<Uint128>(2549297995355413924ULL) << 64) | 4865540595714422341ULL;

uint64_t RotateRight(uint64_t value, unsigned rot) {
  return (value >> rot) | (value << ((64 - rot) & 63));
}

}  // namespace

SeedSequence::SeedSequence(uint64_t seed) {
  std::array<uint32_t, 2> words = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  *this = SeedSequence(std::span<const uint32_t>(words.data(), words[1] != 0 ? 2 : 1));
}

SeedSequence::SeedSequence(std::span<const uint32_t> entropy_words) {
  uint32_t hash_const = kInitA;
  for (int i = 0; i < kPoolSize; ++i) {
    const uint32_t word = static_cast<size_t>(i) < entropy_words.size() ? entropy_words[i] : 0;
    pool_[i] = HashMix(word, hash_const);
  }
  for (int src = 0; src < kPoolSize; ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool_[dst] = Mix(pool_[dst], HashMix(pool_[src], hash_const));
    }
  }
  for (size_t src = kPoolSize; src < entropy_words.size(); ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      pool_[dst] = Mix(pool_[dst], HashMix(entropy_words[src], hash_const));
    }
  }
}

std::vector<uint32_t> SeedSequence::GenerateState32(size_t n_words) const {
  std::vector<uint32_t> state(n_words);
  uint32_t hash_const = kInitB;
  for (size_t i = 0; i < n_words; ++i) {
    uint32_t value = pool_[i % kPoolSize];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    state[i] = value;
  }
  return state;
}

std::vector<uint64_t> SeedSequence::GenerateState64(size_t n_words) const {
  const std::vector<uint32_t> words = GenerateState32(2 * n_words);
  std::vector<uint64_t> state(n_words);
  for (size_t i = 0; i < n_words; ++i) {
    state[i] = static_cast<uint64_t>(words[2 * i]) | static_cast<uint64_t>(words[2 * i + 1]) << 32;
  }
  return state;
}

Pcg64::Pcg64(const SeedSequence& seed_seq) {
  const std::vector<uint64_t> v = seed_seq.GenerateState64(4);
  *this =
      Pcg64((static_cast<Uint128>(v[0]) << 64) | v[1], (static_cast<Uint128>(v[2]) << 64) | v[3]);
}

Pcg64::Pcg64(Uint128 initstate, Uint128 initseq) {
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  Step();
  state_ += initstate;
  Step();
}

void Pcg64::Step() { state_ = state_ * kPcgMultiplier + inc_; }

uint64_t Pcg64::NextUint64() {
  Step();
  const uint64_t hi = static_cast<uint64_t>(state_ >> 64);
  const uint64_t lo = static_cast<uint64_t>(state_);
  return RotateRight(hi ^ lo, static_cast<unsigned>(hi >> 58));
}

uint32_t Pcg64::NextUint32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  const uint64_t next = NextUint64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

NumpyGenerator::NumpyGenerator(uint64_t seed) : bit_gen_(SeedSequence(seed)) {}

// Lemire's nearly-divisionless bounded draw in [0, rng]; rng < 2^32 - 1.
uint32_t NumpyGenerator::BoundedLemire32(uint32_t rng) {
  const uint32_t rng_excl = rng + 1;
  uint64_t m = static_cast<uint64_t>(bit_gen_.NextUint32()) * rng_excl;
  uint32_t leftover = static_cast<uint32_t>(m);
  if (leftover < rng_excl) {
    const uint32_t threshold = (UINT32_MAX - rng) % rng_excl;  // 2^32 mod rng_excl
    while (leftover < threshold) {
      m = static_cast<uint64_t>(bit_gen_.NextUint32()) * rng_excl;
      leftover = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

// The same in 64 bits; rng < 2^64 - 1.
uint64_t NumpyGenerator::BoundedLemire64(uint64_t rng) {
  const uint64_t rng_excl = rng + 1;
  Uint128 m = static_cast<Uint128>(bit_gen_.NextUint64()) * rng_excl;
  uint64_t leftover = static_cast<uint64_t>(m);
  if (leftover < rng_excl) {
    const uint64_t threshold = (UINT64_MAX - rng) % rng_excl;  // 2^64 mod rng_excl
    while (leftover < threshold) {
      m = static_cast<Uint128>(bit_gen_.NextUint64()) * rng_excl;
      leftover = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

uint64_t NumpyGenerator::BoundedUint64(uint64_t off, uint64_t rng) {
  if (rng == 0) return off;
  if (rng <= UINT32_MAX) {
    if (rng == UINT32_MAX) return off + bit_gen_.NextUint32();
    return off + BoundedLemire32(static_cast<uint32_t>(rng));
  }
  if (rng == UINT64_MAX) return off + bit_gen_.NextUint64();
  return off + BoundedLemire64(rng);
}

std::vector<int64_t> NumpyGenerator::Integers(int64_t low, int64_t high, size_t size) {
  CHECK(low < high) << "Integers: low " << low << " >= high " << high;
  // Two's-complement differences: high - low - 1 fits uint64 for every low < high.
  const uint64_t off = static_cast<uint64_t>(low);
  const uint64_t rng = static_cast<uint64_t>(high) - off - 1;
  std::vector<int64_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<int64_t>(BoundedUint64(off, rng));
  return out;
}

}  // namespace deepinfer
