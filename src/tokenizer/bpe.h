// Byte-level BPE over one pre-tokenized word: the word's bytes start as one symbol each (the
// vocab id of the byte's alphabet character) and adjacent pairs merge by rank, lowest rank
// first, leftmost first among equal ranks, until no adjacent pair has a merge.
//
// Encoding is const and thread-safe. Results for words up to kMaxCachedWordBytes are cached
// (bounded; once full, new words are computed but not inserted), since real text repeats words.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/byte_level.h"

namespace deepinfer::tokenizer {

class WordCache;

class BpeModel {
 public:
  static constexpr size_t kMaxCachedWordBytes = 64;
  static constexpr size_t kCacheCapacity = 1 << 17;  // words

  // `vocab`: byte-level token string -> id; `merges` in rank order. Every byte's alphabet
  // character must be in the vocab, and both halves of every merge and their concatenation.
  static StatusOr<BpeModel> Build(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges,
                                  const ByteLevelAlphabet& alphabet);

  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of the raw bytes `word` (one pre-token) to *ids.
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;

  // The same without the cache (benchmarks and tests compare the two).
  void EncodeWordUncached(std::string_view word, std::vector<int32_t>* ids) const;

 private:
  // Words up to this many bytes merge in place in small arrays (a linear scan for the lowest
  // rank, O(n^2) but no allocation); longer ones use a linked list and a heap.
  static constexpr int kSmallWord = 96;
  static constexpr int32_t kNoMerge = INT32_MAX;

  // Merge table: open addressing over (left id, right id) keys, linear probing.
  struct MergeSlot {
    uint64_t key = ~uint64_t{0};  // empty
    int32_t rank = kNoMerge;
    int32_t id = -1;
  };
  BpeModel();
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // The merge of the pair (a, b), or a slot with rank kNoMerge.
  const MergeSlot& FindMerge(int32_t a, int32_t b) const {
    const uint64_t key = PairKey(a, b);
    size_t i = (key * 0x9E3779B97F4A7C15ull) >> merge_shift_;
    while (true) {
      const MergeSlot& slot = merge_slots_[i];
      if (slot.key == key || slot.rank == kNoMerge) return slot;
      i = (i + 1) & (merge_slots_.size() - 1);
    }
  }
  void EncodeSmall(std::string_view word, std::vector<int32_t>* ids) const;
  void EncodeLarge(std::string_view word, std::vector<int32_t>* ids) const;

  std::array<int32_t, 256> byte_ids_{};
  std::vector<MergeSlot> merge_slots_;  // power-of-two size, at most half full
  int merge_shift_ = 64;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace deepinfer::tokenizer
