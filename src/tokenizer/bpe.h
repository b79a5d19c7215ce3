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
#include <unordered_map>
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
  struct MergeResult {
    int32_t rank;
    int32_t id;
  };
  BpeModel();
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const MergeResult* FindMerge(int32_t a, int32_t b) const;

  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, MergeResult> merges_;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace deepinfer::tokenizer
