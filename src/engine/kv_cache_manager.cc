#include "engine/kv_cache_manager.h"

#include <algorithm>
#include <string>

#include <xxhash.h>

#include "core/check.h"

namespace deepinfer::engine {

BlockKey ChainBlockKey(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                       int64_t prompt_rows) {
  // XXH3-128 over (parent key, tokens): 128 bits keep accidental collisions out of reach.
  XXH3_state_t* st = XXH3_createState();
  CHECK(st != nullptr);
  XXH3_128bits_reset(st);
  const uint8_t has_parent = parent.has_value() ? 1 : 0;
  XXH3_128bits_update(st, &has_parent, 1);
  if (parent) {
    XXH3_128bits_update(st, &parent->lo, sizeof(uint64_t));
    XXH3_128bits_update(st, &parent->hi, sizeof(uint64_t));
  }
  XXH3_128bits_update(st, tokens.data(), tokens.size_bytes());
  if (prompt_rows >= 0) XXH3_128bits_update(st, &prompt_rows, sizeof(prompt_rows));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return BlockKey{h.low64, h.high64};
}

void AppendBlockKeys(std::span<const int32_t> tokens, int64_t prompt_len, int64_t block_tokens,
                     bool key_prompt_rows, std::vector<BlockKey>* keys) {
  const int64_t full = static_cast<int64_t>(tokens.size()) / block_tokens;
  for (int64_t b = static_cast<int64_t>(keys->size()); b < full; ++b) {
    std::optional<BlockKey> parent;
    if (b > 0) parent = (*keys)[static_cast<size_t>(b - 1)];
    const int64_t prompt_rows =
        key_prompt_rows ? std::clamp<int64_t>(prompt_len - b * block_tokens, 0, block_tokens) : -1;
    keys->push_back(ChainBlockKey(
        parent,
        tokens.subspan(static_cast<size_t>(b * block_tokens), static_cast<size_t>(block_tokens)),
        prompt_rows));
  }
}

KvCacheManager::KvCacheManager(int64_t capacity, int64_t block_tokens, bool prefix_cache)
    : block_tokens_(block_tokens), prefix_cache_(prefix_cache) {
  CHECK_GE(capacity, 0);
  CHECK_GT(block_tokens, 0);
  const size_t n = static_cast<size_t>(capacity);
  refs_.assign(n, 0);
  key_of_.assign(n, std::nullopt);
  lru_pos_.assign(n, lru_.end());
  in_lru_.assign(n, 0);
  for (int64_t i = capacity - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

void KvCacheManager::Uncache(int32_t page) {
  auto& key = key_of_[static_cast<size_t>(page)];
  if (key) {
    auto it = cache_.find(*key);
    if (it != cache_.end() && it->second == page) cache_.erase(it);
    key.reset();
  }
}

int32_t KvCacheManager::Allocate() {
  int32_t page = -1;
  if (!free_.empty()) {
    page = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    page = lru_.front();
    lru_.pop_front();
    in_lru_[static_cast<size_t>(page)] = 0;
    Uncache(page);
    ++evictions_;
  } else {
    return -1;
  }
  refs_[static_cast<size_t>(page)] = 1;
  return page;
}

void KvCacheManager::AddRef(int32_t page) {
  int32_t& r = refs_[static_cast<size_t>(page)];
  CHECK_GT(r, 0) << "sharing page " << page << " that nobody holds";
  ++r;
}

void KvCacheManager::Release(int32_t page) {
  int32_t& r = refs_[static_cast<size_t>(page)];
  CHECK_GT(r, 0) << "page " << page << " released more often than taken";
  if (--r > 0) return;
  if (key_of_[static_cast<size_t>(page)]) {
    lru_.push_back(page);
    lru_pos_[static_cast<size_t>(page)] = std::prev(lru_.end());
    in_lru_[static_cast<size_t>(page)] = 1;
  } else {
    free_.push_back(page);
  }
}

void KvCacheManager::Register(int32_t page, const BlockKey& key) {
  if (!prefix_cache_) return;
  CHECK_GT(refs_[static_cast<size_t>(page)], 0) << "registering a page nobody holds";
  if (key_of_[static_cast<size_t>(page)]) return;  // already registered (a shared page)
  if (cache_.count(key)) return;                   // another page holds this block: keep the first
  cache_.emplace(key, page);
  key_of_[static_cast<size_t>(page)] = key;
}

std::vector<int32_t> KvCacheManager::Match(std::span<const BlockKey> keys, int64_t queried) {
  std::vector<int32_t> pages;
  if (!prefix_cache_) return pages;
  queries_ += queried >= 0 ? queried : static_cast<int64_t>(keys.size());
  for (const BlockKey& k : keys) {
    auto it = cache_.find(k);
    if (it == cache_.end()) break;
    ++hits_;
    const int32_t page = it->second;
    if (in_lru_[static_cast<size_t>(page)]) {
      lru_.erase(lru_pos_[static_cast<size_t>(page)]);
      in_lru_[static_cast<size_t>(page)] = 0;
    }
    ++refs_[static_cast<size_t>(page)];
    pages.push_back(page);
  }
  return pages;
}

int64_t KvCacheManager::Peek(std::span<const BlockKey> keys) const {
  return static_cast<int64_t>(Find(keys).size());
}

std::vector<int32_t> KvCacheManager::Find(std::span<const BlockKey> keys) const {
  std::vector<int32_t> pages;
  if (!prefix_cache_) return pages;
  for (const BlockKey& k : keys) {
    auto it = cache_.find(k);
    if (it == cache_.end()) break;
    pages.push_back(it->second);
  }
  return pages;
}

KvCacheCounters KvCacheManager::counters() const {
  KvCacheCounters c;
  c.capacity = capacity();
  c.free = static_cast<int64_t>(free_.size());
  c.cached = static_cast<int64_t>(lru_.size());
  c.used = c.capacity - c.free - c.cached;
  c.prefix_queries = queries_;
  c.prefix_hits = hits_;
  c.evictions = evictions_;
  return c;
}

Status KvCacheManager::CheckIntegrity(const std::vector<int32_t>* expected_refs) const {
  const size_t n = refs_.size();
  std::vector<int> where(n, 0);  // bit 1 free, bit 2 lru
  for (int32_t p : free_) {
    if (p < 0 || static_cast<size_t>(p) >= n) return Internal("free list holds a bad page id");
    if (where[p] & 1) return Internal("page " + std::to_string(p) + " is free twice");
    where[p] |= 1;
  }
  for (int32_t p : lru_) {
    if (where[p] & 2) return Internal("page " + std::to_string(p) + " is on the LRU twice");
    where[p] |= 2;
  }
  for (size_t p = 0; p < n; ++p) {
    const std::string page = "page " + std::to_string(p);
    const int places = (where[p] & 1) + ((where[p] >> 1) & 1) + (refs_[p] > 0 ? 1 : 0);
    if (refs_[p] < 0) return Internal(page + " has a negative ref count");
    if (places != 1) {
      return Internal(page + " is in " + std::to_string(places) + " of {free, LRU, in use} (ref " +
                      std::to_string(refs_[p]) + ")");
    }
    if ((where[p] & 2) && !key_of_[p]) return Internal(page + " is on the LRU but not cached");
    if ((where[p] & 1) && key_of_[p]) return Internal(page + " is free but still cached");
    if (static_cast<bool>(where[p] & 2) != static_cast<bool>(in_lru_[p])) {
      return Internal(page + ": LRU membership flag is stale");
    }
    if (key_of_[p]) {
      auto it = cache_.find(*key_of_[p]);
      if (it == cache_.end() || it->second != static_cast<int32_t>(p)) {
        return Internal(page + " has a key the cache does not map to it");
      }
    }
    if (expected_refs && (*expected_refs)[p] != refs_[p]) {
      return Internal(page + " has ref count " + std::to_string(refs_[p]) + ", holders say " +
                      std::to_string((*expected_refs)[p]));
    }
  }
  for (const auto& [key, page] : cache_) {
    if (!key_of_[static_cast<size_t>(page)] || !(*key_of_[static_cast<size_t>(page)] == key)) {
      return Internal("cache maps a key to page " + std::to_string(page) + " of another key");
    }
  }
  return Status::Ok();
}

}  // namespace deepinfer::engine
