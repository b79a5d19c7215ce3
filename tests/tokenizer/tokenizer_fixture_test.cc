// Exact agreement with the Hugging Face tokenizers goldens (fixtures/tokenizer-deepseek-v3):
// every encode case's ids and every decode case's text.
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace deepinfer::tokenizer {
namespace {

using testing::FixtureDir;
using testing::ReadJsonLines;
using testing::V3Tokenizer;

TEST(TokenizerFixture, EveryEncodeCase) {
  const Tokenizer* tok = V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  int n = 0;
  for (const auto& c : ReadJsonLines(FixtureDir() + "/cases.jsonl")) {
    if (c["kind"] != "encode") continue;
    ++n;
    auto ids = tok->Encode(c["text"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << c["name"] << ": " << ids.status().ToString();
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << c["name"];
    // The same ids decode back to the text (every case is valid UTF-8).
    auto text = tok->Decode(*ids, /*skip_special_tokens=*/false);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, c["text"].get<std::string>()) << c["name"];
  }
  EXPECT_EQ(n, 162);
}

TEST(TokenizerFixture, EveryDecodeCase) {
  const Tokenizer* tok = V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  int n = 0;
  for (const auto& c : ReadJsonLines(FixtureDir() + "/cases.jsonl")) {
    if (c["kind"] != "decode") continue;
    ++n;
    auto text = tok->Decode(c["ids"].get<std::vector<int32_t>>(), c["skip_special_tokens"]);
    ASSERT_TRUE(text.ok()) << c["name"] << ": " << text.status().ToString();
    EXPECT_EQ(*text, c["text"].get<std::string>()) << c["name"];
  }
  EXPECT_EQ(n, 35);
}

TEST(TokenizerFixture, VocabularyFacts) {
  const Tokenizer* tok = V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_ids(), 128815);
  int n_special = 0;
  for (int32_t id = 0; id < tok->n_ids(); ++id) {
    ASSERT_TRUE(tok->HasId(id)) << id;
    n_special += tok->IsSpecial(id);
  }
  // 0..2, 128000..128799 and 128805 (the fixture README says 803, but its own list is 804).
  EXPECT_EQ(n_special, 804);
  EXPECT_TRUE(tok->IsSpecial(128805));   // <|EOT|>
  EXPECT_FALSE(tok->IsSpecial(128803));  // <｜User｜> is added but not special
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_TRUE(tok->add_bos_token());
}

TEST(TokenizerFixture, AddSpecialTokensPrependsBosFromConfig) {
  const Tokenizer* tok = V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  auto plain = tok->Encode("Hello world");
  auto with_bos = tok->Encode("Hello world", /*add_special_tokens=*/true);
  ASSERT_TRUE(plain.ok() && with_bos.ok());
  EXPECT_EQ(*plain, (std::vector<int32_t>{19923, 2058}));
  EXPECT_EQ(*with_bos, (std::vector<int32_t>{0, 19923, 2058}));
}

}  // namespace
}  // namespace deepinfer::tokenizer
