// The Engram compressed-token map against fixtures/tokenizer-deepseek-v3/engram_token_map.json
// (computed with the Hugging Face Rust normalizers), plus the normalization steps one by one.
#include "tokenizer/engram_token_map.h"

#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace deepinfer::tokenizer {
namespace {

TEST(EngramTokenMap, EqualsFixture) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  std::ifstream in(testing::FixtureDir() + "/engram_token_map.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json want = nlohmann::json::parse(in);
  auto got = BuildEngramTokenMap(*tok);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->compressed_vocab_size, want["compressed_vocab_size"].get<int32_t>());
  const auto want_map = want["map"].get<std::vector<int32_t>>();
  ASSERT_EQ(got->map.size(), want_map.size());
  int n_diff = 0;
  for (size_t id = 0; id < want_map.size(); ++id) {
    if (got->map[id] != want_map[id] && ++n_diff <= 10) {
      ADD_FAILURE() << "id " << id << " (\"" << tok->TokenString(static_cast<int32_t>(id))
                    << "\"): got " << got->map[id] << ", want " << want_map[id];
    }
  }
  EXPECT_EQ(n_diff, 0);
}

TEST(EngramTokenMap, NormalizationSteps) {
  auto norm = [](std::string_view s) { return NormalizeForEngram(s).value(); };
  EXPECT_EQ(norm("THE"), "the");
  EXPECT_EQ(norm(" the"), "the");                               // strip
  EXPECT_EQ(norm(" "), " ");                                    // a lone space stays
  EXPECT_EQ(norm("\t\n "), " ");                                // one run collapses to a lone space
  EXPECT_EQ(norm("a \t b"), "a b");                             // inner runs collapse
  EXPECT_EQ(norm("\xEF\xAC\x81"), "fi");                        // NFKC: U+FB01 ligature
  EXPECT_EQ(norm("Caf\xC3\xA9"), "cafe");                       // accents stripped after NFD
  EXPECT_EQ(norm("\xE0\xA4\x95\xE0\xA4\xBE"), "\xE0\xA4\x95");  // Mc (U+093E) removed too
  EXPECT_EQ(norm("\xCE\x9F\xCE\xA3"), "\xCE\xBF\xCF\x82");      // final sigma: "ΟΣ" -> "ος"
  EXPECT_EQ(norm("\xE3\x80\x80x\xE3\x80\x80"), "x");            // U+3000 is White_Space
  EXPECT_EQ(norm("\xCC\x81"), "");  // only a mark: empty (caller keeps text)
  EXPECT_FALSE(NormalizeForEngram("\xFF").ok());
}

}  // namespace
}  // namespace deepinfer::tokenizer
