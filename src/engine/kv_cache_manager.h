// KvCacheManager: the page pool of the engine's KV cache system (docs/engine_contract.md).
//
// Pages are ids [0, capacity) of fixed-size pages (the storage lives with the model runner;
// model/deepseek_v41/kv_pages.h). The manager owns who uses them:
//   * a page is *free*, *in use* (ref count > 0: one per sequence whose page table holds it), or
//     *cached* (ref count 0 but registered in the prefix cache, evictable, on an LRU list);
//   * a page that a sequence has completely written (all its positions consumed) is registered
//     under the chained hash of its token block: key_i = H(key_{i-1}, tokens of block i), so a
//     key names the whole prefix up to the block's end;
//   * a new sequence matches its prompt's full blocks against the cache and shares those pages
//     (ref count + 1) instead of computing them;
//   * Allocate takes a free page, else evicts the least recently released cached page.
// Not thread-safe: the engine's step loop is its only caller.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace deepinfer::engine {

struct BlockKey {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi * 31)); }
};

// key of block i from the key of block i-1 (nullopt for the first block), its tokens and, for a
// model whose state depends on which positions were prompt rows (ModelRunner::prompt_sensitive),
// how many of the block's positions were (0 .. block length; -1: not part of the key).
BlockKey ChainBlockKey(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                       int64_t prompt_rows = -1);

// Extends `keys` (the keys of the first keys->size() full blocks of `tokens`) to every full block
// of `tokens`, a sequence whose first `prompt_len` positions are its prompt: with
// key_prompt_rows (ModelRunner::prompt_sensitive), each key counts the block's prompt rows.
// The one definition of a sequence's block keys: the scheduler, the KV hand-off and the router
// all call it.
void AppendBlockKeys(std::span<const int32_t> tokens, int64_t prompt_len, int64_t block_tokens,
                     bool key_prompt_rows, std::vector<BlockKey>* keys);

struct KvCacheCounters {
  int64_t capacity = 0;
  int64_t used = 0;    // ref count > 0
  int64_t cached = 0;  // ref count 0, in the prefix cache
  int64_t free = 0;
  int64_t prefix_queries = 0;  // prompt blocks looked up
  int64_t prefix_hits = 0;     // of which found
  int64_t evictions = 0;
};

class KvCacheManager {
 public:
  // capacity pages of block_tokens positions each; prefix_cache off = nothing is registered.
  KvCacheManager(int64_t capacity, int64_t block_tokens, bool prefix_cache);

  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }
  int64_t block_tokens() const { return block_tokens_; }
  bool prefix_cache() const { return prefix_cache_; }
  // Pages Allocate can still hand out (free + evictable).
  int64_t available() const { return static_cast<int64_t>(free_.size() + lru_.size()); }

  // A page for exclusive use (ref count 1), or -1 when every page is in use.
  int32_t Allocate();
  // One more reference to a page in use (a forked sequence shares its parent's full pages).
  void AddRef(int32_t page);
  // Drops one reference; at zero the page goes to the LRU list if cached, else to the free list.
  void Release(int32_t page);
  // Registers a page a sequence has completely written under `key` (no-op without the prefix
  // cache, or when another page already holds the key: the first one stays canonical).
  void Register(int32_t page, const BlockKey& key);

  // The pages of the longest cached run of `keys` from the start, each with one more reference
  // (the caller now holds them). Counts `queried` blocks looked up (default: keys.size(); a
  // caller that found the run with Peek passes the blocks it offered) and the hits.
  std::vector<int32_t> Match(std::span<const BlockKey> keys, int64_t queried = -1);
  // Pages a Match of `keys` would return, without taking them or counting.
  int64_t Peek(std::span<const BlockKey> keys) const;
  // The pages a Match of `keys` would return, without taking them or counting.
  std::vector<int32_t> Find(std::span<const BlockKey> keys) const;

  int32_t ref_count(int32_t page) const { return refs_[static_cast<size_t>(page)]; }
  KvCacheCounters counters() const;

  // Verifies every invariant (each page in exactly one of free / in use / LRU; the LRU holds
  // exactly the cached pages with ref 0; map and page keys agree; `expected_refs`, when given,
  // equals each page's ref count). Returns the first violation.
  Status CheckIntegrity(const std::vector<int32_t>* expected_refs = nullptr) const;

 private:
  void Uncache(int32_t page);

  int64_t block_tokens_;
  bool prefix_cache_;
  std::vector<int32_t> refs_;
  std::vector<std::optional<BlockKey>> key_of_;  // registered key per page
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // cached pages with ref 0, least recent first
  std::vector<std::list<int32_t>::iterator> lru_pos_;
  std::vector<uint8_t> in_lru_;
  std::unordered_map<BlockKey, int32_t, BlockKeyHash> cache_;
  int64_t queries_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace deepinfer::engine
