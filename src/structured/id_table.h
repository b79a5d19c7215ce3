// An open-addressing hash index of ids whose keys live elsewhere (the state space's nodes and
// states): the table holds (hash, id) pairs; the caller hashes its key and says whether a stored
// id equals it. No allocation per entry, unlike a node-based map keyed by a copied key, which
// matters where a vocabulary walk interns thousands of new states.
#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::structured {

class IdTable {
 public:
  // The id stored under hash h for which same(id) holds, or -1.
  template <typename Same>
  int32_t Find(uint64_t h, Same&& same) const {
    if (slots_.empty()) return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && same(s.id)) return s.id;
    }
  }

  // Stores id under h (the caller found no equal id first).
  void Insert(uint64_t h, int32_t id) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    Place(h, id);
    ++size_;
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return sizeof(Slot) * slots_.capacity(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t id = -1;
  };

  void Place(uint64_t h, int32_t id) {
    size_t i = h & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = {h, id};
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.id >= 0) Place(s.hash, s.id);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// A 64-bit mix of a few 32-bit values (splitmix64 finaliser per step).
inline uint64_t MixIds(uint64_t h, uint32_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

}  // namespace deepinfer::structured
