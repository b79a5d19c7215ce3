// Bad input gives a clear Status: malformed or unsupported tokenizer.json, bad
// tokenizer_config.json, invalid UTF-8 to encode, unknown special tokens and ids. Uses a small
// hand-built tokenizer.json (256 byte tokens + two merges + two added tokens).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace deepinfer::tokenizer {
namespace {

using PlainJson = nlohmann::json;

PlainJson ToyJson() {
  ByteLevelAlphabet alphabet;
  PlainJson vocab = PlainJson::object();
  for (int b = 0; b < 256; ++b) vocab[alphabet.Utf8(static_cast<uint8_t>(b))] = b;
  vocab["he"] = 256;
  vocab["hel"] = 257;
  PlainJson j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "he l"}}};
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["added_tokens"] = {
      {{"id", 258}, {"content", "<bos>"}, {"special", true}, {"normalized", false}},
      {{"id", 259}, {"content", "<tool>"}, {"special", false}, {"normalized", true}}};
  return j;
}

StatusOr<std::unique_ptr<Tokenizer>> Build(const PlainJson& j, const std::string& config = "") {
  DI_ASSIGN_OR_RETURN(TokenizerSpec spec, ParseTokenizerJson(j.dump(), "tokenizer.json"));
  if (!config.empty()) {
    DI_RETURN_IF_ERROR(ParseTokenizerConfig(config, "tokenizer_config.json", &spec));
  }
  return Tokenizer::FromSpec(spec);
}

void ExpectError(const Status& s, StatusCode code, const std::string& fragment) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(TokenizerErrors, ToyTokenizerWorks) {
  auto tok = Build(ToyJson(), R"({"add_bos_token": true, "bos_token": "<bos>"})");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("hello<tool>", true).value(),
            (std::vector<int32_t>{258, 257, 'l', 'o', 259}));
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>{258, 257, 259}, true).value(), "hel<tool>");
}

TEST(TokenizerErrors, MalformedJson) {
  ExpectError(ParseTokenizerJson("{\"model\": ", "t.json").status(), StatusCode::kInvalidArgument,
              "t.json: JSON parse error");
  ExpectError(ParseTokenizerJson("[1]", "t.json").status(), StatusCode::kInvalidArgument,
              "top level is not a JSON object");
  PlainJson j = ToyJson();
  j.erase("model");
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "no \"model\"");
  j = ToyJson();
  j["model"]["vocab"]["x"] = "seven";
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "model.vocab[\"x\"]");
  j = ToyJson();
  j["model"]["merges"] = {"h e", "hel"};
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "model.merges[1]");
  j = ToyJson();
  j["model"]["merges"] = {"h e", "q z"};
  j["model"]["vocab"].erase("hel");
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "not in model.vocab");
  j = ToyJson();
  j["added_tokens"][0].erase("content");
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "added_tokens[0]");
  j = ToyJson();
  j["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  ExpectError(Build(j).status(), StatusCode::kUnimplemented, "must end with ByteLevel");
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  ExpectError(Build(j).status(), StatusCode::kInvalidArgument, "regex \"(unclosed\"");
}

TEST(TokenizerErrors, UnsupportedFeaturesAreNamed) {
  PlainJson j = ToyJson();
  j["normalizer"] = {{"type", "NFC"}};
  ExpectError(Build(j).status(), StatusCode::kUnimplemented, "normalizer");
  j = ToyJson();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Removed"}},
        {{"type", "ByteLevel"}}}}};
  ExpectError(Build(j).status(), StatusCode::kUnimplemented, "behavior \"Removed\"");
  j = ToyJson();
  j["added_tokens"][1]["lstrip"] = true;
  ExpectError(Build(j).status(), StatusCode::kUnimplemented, "lstrip");
  j = ToyJson();
  j["model"]["type"] = "WordPiece";
  ExpectError(Build(j).status(), StatusCode::kUnimplemented, "not BPE");
}

TEST(TokenizerErrors, BadConfig) {
  ExpectError(Build(ToyJson(), R"({"add_bos_token": true, "bos_token": "<nope>"})").status(),
              StatusCode::kInvalidArgument, "unknown special token \"<nope>\"");
  ExpectError(Build(ToyJson(), R"({"add_bos_token": true})").status(), StatusCode::kInvalidArgument,
              "no bos_token");
  ExpectError(Build(ToyJson(), R"({"add_bos_token": "yes"})").status(),
              StatusCode::kInvalidArgument, "add_bos_token is not a boolean");
  ExpectError(Tokenizer::Load("/nonexistent-dir").status(), StatusCode::kNotFound,
              "/nonexistent-dir/tokenizer.json");
}

TEST(TokenizerErrors, BadEncodeAndDecodeInput) {
  auto tok = Build(ToyJson());
  ASSERT_TRUE(tok.ok());
  ExpectError((*tok)->Encode("ok\xC3(").status(), StatusCode::kInvalidArgument,
              "invalid UTF-8 at byte 2");
  ExpectError((*tok)->Encode("\xED\xA0\x80").status(), StatusCode::kInvalidArgument,
              "invalid UTF-8 at byte 0");  // a surrogate
  ExpectError((*tok)->Encode("ab\xE2\x82").status(), StatusCode::kInvalidArgument, "truncated");
  ExpectError((*tok)->AddedTokenId("<｜nope｜>").status(), StatusCode::kNotFound,
              "unknown special token");
  EXPECT_EQ((*tok)->AddedTokenId("<tool>").value(), 259);
  ExpectError((*tok)->Decode(std::vector<int32_t>{1, 260}, false).status(), StatusCode::kOutOfRange,
              "token id 260 at position 1");
  ExpectError((*tok)->Decode(std::vector<int32_t>{-5}, false).status(), StatusCode::kOutOfRange,
              "token id -5");
}

TEST(TokenizerErrors, RealTokenizerUnknownSpecialToken) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->AddedTokenId("<｜User｜>").value(), 128803);
  // V4.1-only specials are not in the V3 vocabulary: an error, never a guessed id.
  ExpectError(tok->AddedTokenId("<｜System｜>").status(), StatusCode::kNotFound,
              "unknown special token");
}

}  // namespace
}  // namespace deepinfer::tokenizer
