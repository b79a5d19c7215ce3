// BlockKeyCache: leading-run matches, LRU order and capacity, and that the keys the router lists
// are the engine's own (ChainBlockKey over full prompt blocks).
#include "engine/block_key_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <vector>

#include "engine/kv_cache_manager.h"

namespace deepinfer::engine {
namespace {

std::vector<BlockKey> KeysOf(const std::vector<int32_t>& prompt, int64_t page,
                             bool prompt_sensitive) {
  std::vector<BlockKey> keys;
  AppendBlockKeys(prompt, static_cast<int64_t>(prompt.size()), page, prompt_sensitive, &keys);
  return keys;
}

std::vector<int32_t> Tokens(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(BlockKeyCache, MatchesTheLeadingRunOnly) {
  BlockKeyCache cache(100);
  const std::vector<BlockKey> a = KeysOf(Tokens(40, 0), 8, false);  // 5 blocks
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(cache.MatchedBlocks(a), 0);
  cache.Insert(std::span(a).first(3));
  EXPECT_EQ(cache.MatchedBlocks(a), 3);
  // Same first 2 blocks, then other tokens: the chain diverges at block 2.
  std::vector<int32_t> other = Tokens(40, 0);
  other[20] = 999;
  const std::vector<BlockKey> b = KeysOf(other, 8, false);
  EXPECT_EQ(cache.MatchedBlocks(b), 2);
  // A later key present without its predecessors does not count (keys name whole prefixes).
  BlockKeyCache tail(100);
  tail.Insert(std::span(a).subspan(1));
  EXPECT_EQ(tail.MatchedBlocks(a), 0);
  EXPECT_TRUE(cache.CheckIntegrity());
}

TEST(BlockKeyCache, MatchingNeverMutates) {
  BlockKeyCache cache(2);
  const std::vector<BlockKey> a = KeysOf(Tokens(16, 0), 8, false);
  const std::vector<BlockKey> b = KeysOf(Tokens(8, 100), 8, false);
  cache.Insert(a);                       // a0, a1
  EXPECT_EQ(cache.MatchedBlocks(a), 2);  // a match must not refresh a0 ...
  cache.Insert(b);                       // ... so b evicts a0, the least recently inserted
  EXPECT_EQ(cache.MatchedBlocks(a), 0);
  EXPECT_EQ(cache.MatchedBlocks(b), 1);
  EXPECT_EQ(cache.size(), 2);
}

TEST(BlockKeyCache, LruEvictionAndRefresh) {
  BlockKeyCache cache(4);
  const std::vector<BlockKey> a = KeysOf(Tokens(16, 0), 8, false);    // 2 keys
  const std::vector<BlockKey> b = KeysOf(Tokens(16, 100), 8, false);  // 2 keys
  const std::vector<BlockKey> c = KeysOf(Tokens(16, 200), 8, false);  // 2 keys
  cache.Insert(a);
  cache.Insert(b);
  cache.Insert(a);  // refresh: b is now the least recently used
  cache.Insert(c);  // evicts b
  EXPECT_EQ(cache.size(), 4);
  EXPECT_EQ(cache.MatchedBlocks(a), 2);
  EXPECT_EQ(cache.MatchedBlocks(b), 0);
  EXPECT_EQ(cache.MatchedBlocks(c), 2);
  EXPECT_TRUE(cache.CheckIntegrity());
  cache.Clear();
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.MatchedBlocks(a), 0);
  EXPECT_TRUE(cache.CheckIntegrity());
}

TEST(BlockKeyCache, ZeroCapacityHoldsNothing) {
  BlockKeyCache cache(0);
  cache.Insert(KeysOf(Tokens(16, 0), 8, false));
  EXPECT_EQ(cache.size(), 0);
  EXPECT_TRUE(cache.CheckIntegrity());
}

// The engine's keys for a prompt (Sequence::UpdateBlockKeys): key_i = ChainBlockKey(key_{i-1},
// block i, prompt_rows) with prompt_rows = the block length for a prompt-sensitive model, -1
// otherwise; full blocks only.
TEST(BlockKeyCache, KeysAreTheEnginesChainOverFullPromptBlocks) {
  const std::vector<int32_t> prompt = Tokens(21, 7);  // 2 full blocks of 8 + 5 tokens
  for (const bool sensitive : {false, true}) {
    const std::vector<BlockKey> keys = KeysOf(prompt, 8, sensitive);
    ASSERT_EQ(keys.size(), 2u);
    std::optional<BlockKey> parent;
    for (size_t b = 0; b < 2; ++b) {
      const BlockKey k =
          engine::ChainBlockKey(parent, std::span(prompt).subspan(b * 8, 8), sensitive ? 8 : -1);
      EXPECT_EQ(keys[b], k) << "block " << b << " sensitive " << sensitive;
      parent = k;
    }
  }
  EXPECT_NE(KeysOf(prompt, 8, false)[0], KeysOf(prompt, 8, true)[0]);
}

}  // namespace
}  // namespace deepinfer::engine
