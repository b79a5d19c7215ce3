#include "engine/block_key_cache.h"

#include "core/check.h"

namespace deepinfer::engine {

BlockKeyCache::BlockKeyCache(int64_t capacity) : capacity_(capacity) { CHECK_GE(capacity, 0); }

int64_t BlockKeyCache::MatchedBlocks(std::span<const BlockKey> keys) const {
  int64_t n = 0;
  for (const BlockKey& k : keys) {
    if (!index_.contains(k)) break;
    ++n;
  }
  return n;
}

void BlockKeyCache::Insert(std::span<const BlockKey> keys) {
  if (capacity_ == 0) return;
  for (const BlockKey& k : keys) {
    if (auto it = index_.find(k); it != index_.end()) {
      lru_.splice(lru_.end(), lru_, it->second);  // most recently used
      continue;
    }
    lru_.push_back(k);
    index_.emplace(k, std::prev(lru_.end()));
    if (static_cast<int64_t>(lru_.size()) > capacity_) {
      index_.erase(lru_.front());
      lru_.pop_front();
    }
  }
}

void BlockKeyCache::Clear() {
  lru_.clear();
  index_.clear();
}

bool BlockKeyCache::CheckIntegrity() const {
  if (lru_.size() != index_.size() || static_cast<int64_t>(lru_.size()) > capacity_) return false;
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const auto found = index_.find(*it);
    if (found == index_.end() || found->second != it) return false;
  }
  return true;
}

}  // namespace deepinfer::engine
