#include "tokenizer/word_cache.h"

#include <mutex>

namespace deepinfer::tokenizer {

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>* ids) const {
  std::shared_lock lock(mutex_);
  const auto it = map_.find(word);
  if (it == map_.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Insert(std::string_view word, const int32_t* ids, size_t n_ids) {
  std::unique_lock lock(mutex_);
  if (map_.size() >= capacity_) return;
  map_.try_emplace(std::string(word), ids, ids + n_ids);
}

size_t WordCache::size() const {
  std::shared_lock lock(mutex_);
  return map_.size();
}

}  // namespace deepinfer::tokenizer
