// A bounded, thread-safe map from a pre-tokenized word (raw bytes) to its BPE ids. Inserts stop
// when the capacity is reached (no eviction: a hot vocabulary settles in early, and lookups stay
// lock-light under a shared mutex).
#pragma once

#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace deepinfer::tokenizer {

class WordCache {
 public:
  explicit WordCache(size_t capacity) : capacity_(capacity) {}

  // Appends the cached ids of `word` to *ids and returns true, or returns false.
  bool Lookup(std::string_view word, std::vector<int32_t>* ids) const;
  void Insert(std::string_view word, const int32_t* ids, size_t n_ids);
  size_t size() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  size_t capacity_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map_;
};

}  // namespace deepinfer::tokenizer
