// BpeModel on a hand-made vocabulary: merge order (lowest rank first, leftmost among equals), the
// small-word and long-word paths agreeing, the cache returning what it stored, and bad tables.
#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

namespace deepinfer::tokenizer {
namespace {

struct Toy {
  ByteLevelAlphabet alphabet;
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  Toy() {
    for (int b = 0; b < 256; ++b) vocab.emplace_back(alphabet.Utf8(static_cast<uint8_t>(b)), b);
    // ranks: 0 "a a", 1 "aa aa", 2 "b c", 3 "a bc"
    for (const auto& [l, r] : std::vector<std::pair<std::string, std::string>>{
             {"a", "a"}, {"aa", "aa"}, {"b", "c"}, {"a", "bc"}}) {
      merges.emplace_back(l, r);
      vocab.emplace_back(l + r, static_cast<int32_t>(vocab.size()));
    }
  }
};

constexpr int32_t kAa = 256, kAaaa = 257, kBc = 258, kAbc = 259;

std::vector<int32_t> Encode(const BpeModel& m, std::string_view word, bool cached) {
  std::vector<int32_t> ids;
  cached ? m.EncodeWord(word, &ids) : m.EncodeWordUncached(word, &ids);
  return ids;
}

TEST(Bpe, MergesByRankLeftmostFirst) {
  Toy toy;
  auto m = BpeModel::Build(toy.vocab, toy.merges, toy.alphabet);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(Encode(*m, "aaaaa", false), (std::vector<int32_t>{kAaaa, 'a'}));
  EXPECT_EQ(Encode(*m, "aaa", false), (std::vector<int32_t>{kAa, 'a'}));  // leftmost pair first
  // "a a" (rank 0) beats "b c" (rank 2), so "abc" cannot use "a bc".
  EXPECT_EQ(Encode(*m, "aabc", false), (std::vector<int32_t>{kAa, kBc}));
  EXPECT_EQ(Encode(*m, "xabc", false), (std::vector<int32_t>{'x', kAbc}));
  EXPECT_EQ(Encode(*m, "", false), (std::vector<int32_t>{}));
}

TEST(Bpe, LongWordsMatchShortWordPath) {
  Toy toy;
  auto m = BpeModel::Build(toy.vocab, toy.merges, toy.alphabet);
  ASSERT_TRUE(m.ok());
  // Lengths on both sides of the small-word limit (96 bytes) give the periodic result.
  for (int n : {95, 96, 97, 98, 200, 1001}) {
    const std::string word(n, 'a');
    std::vector<int32_t> want(n / 4, kAaaa);
    if (n % 4 >= 2) want.push_back(kAa);
    if (n % 2 == 1) want.push_back('a');
    EXPECT_EQ(Encode(*m, word, false), want) << n;
  }
  std::string mixed;
  for (int i = 0; i < 60; ++i) mixed += "abcaa";
  const auto ids = Encode(*m, mixed, false);
  std::vector<int32_t> want;
  for (int i = 0; i < 60; ++i) want.insert(want.end(), {kAbc, kAa});
  EXPECT_EQ(ids, want);
}

TEST(Bpe, CacheReturnsTheSameIds) {
  Toy toy;
  auto m = BpeModel::Build(toy.vocab, toy.merges, toy.alphabet);
  ASSERT_TRUE(m.ok());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(Encode(*m, "aabc", true), (std::vector<int32_t>{kAa, kBc}));
    EXPECT_EQ(Encode(*m, "a", true), (std::vector<int32_t>{'a'}));
  }
}

TEST(Bpe, BadTablesAreErrors) {
  Toy toy;
  auto merges = toy.merges;
  merges.emplace_back("zz", "q");  // "zz" is not in the vocab
  EXPECT_FALSE(BpeModel::Build(toy.vocab, merges, toy.alphabet).ok());
  auto vocab = toy.vocab;
  vocab.erase(vocab.begin() + 'a');  // a byte without its token
  EXPECT_FALSE(BpeModel::Build(vocab, toy.merges, toy.alphabet).ok());
  vocab = toy.vocab;
  vocab.push_back(vocab[5]);  // a token listed twice
  EXPECT_FALSE(BpeModel::Build(vocab, toy.merges, toy.alphabet).ok());
}

}  // namespace
}  // namespace deepinfer::tokenizer
