// BlockKeyCache: the page-block keys (BlockKey, the engine's own chained XXH3-128 keys)
// of the prompts the router has sent to one worker — its estimate of what that worker's prefix
// cache holds. LRU-bounded: past `capacity` keys the least recently sent go first.
//
// Contract (the engine's prefix cache has the same shape):
//   * a key names its whole prefix (keys are chained), so a prompt's hit is the run of its
//     leading keys found here: MatchedBlocks;
//   * MatchedBlocks never mutates (candidates that lose the pick leave no trace); Insert, when
//     the request is really sent, adds the keys and makes them the most recently used;
//   * Clear when the worker fails (its cache may be gone with it).
// It is an estimate: the worker may have evicted pages the router still lists, or hold pages
// of requests sent through another router.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>

#include "engine/kv_cache_manager.h"

namespace deepinfer::engine {

class BlockKeyCache {
 public:
  explicit BlockKeyCache(int64_t capacity);

  // How many of `keys` (one prompt's keys, in block order) are here as a leading run.
  int64_t MatchedBlocks(std::span<const BlockKey> keys) const;
  // Adds `keys` (or refreshes them), most recently used last in order; evicts past capacity.
  void Insert(std::span<const BlockKey> keys);
  void Clear();

  int64_t size() const { return static_cast<int64_t>(lru_.size()); }
  int64_t capacity() const { return capacity_; }
  // The map and the list agree and the size is within the capacity (tests).
  bool CheckIntegrity() const;

 private:
  int64_t capacity_;
  std::list<BlockKey> lru_;  // front = least recently used
  std::unordered_map<BlockKey, std::list<BlockKey>::iterator, BlockKeyHash> index_;
};

}  // namespace deepinfer::engine
