// StreamingDetokenizer against two non-incremental references: Tokenizer::Decode of all ids (no
// stop strings) and, after every token, "decode the prefix, cut at the first stop string, else
// hold back the longest suffix that is a stop-string prefix, and drop an unfinished character".
#include "tokenizer/streaming_detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace deepinfer::tokenizer {
namespace {

// The id of the single-byte token for every byte value.
std::vector<int32_t> ByteTokenIds(const Tokenizer& tok) {
  std::vector<int32_t> ids(256, -1);
  for (int32_t id = 0; id < tok.n_ids(); ++id) {
    if (!tok.IsSpecial(id) && tok.TokenBytes(id).size() == 1 && tok.TokenString(id).size() <= 2) {
      ids[static_cast<uint8_t>(tok.TokenBytes(id)[0])] = id;
    }
  }
  return ids;
}

std::vector<int32_t> BytesAsIds(const Tokenizer& tok, std::string_view bytes) {
  static const std::vector<int32_t> byte_ids = ByteTokenIds(tok);
  std::vector<int32_t> ids;
  for (char c : bytes) ids.push_back(byte_ids[static_cast<uint8_t>(c)]);
  return ids;
}

struct Streamed {
  std::vector<std::string> chunks;
  std::string text;  // all chunks + Finish()
  bool stopped = false;
};

Streamed Stream(const Tokenizer& tok, const std::vector<int32_t>& ids,
                std::vector<std::string> stops, bool skip) {
  auto detok = StreamingDetokenizer::Create(tok, std::move(stops), skip);
  EXPECT_TRUE(detok.ok());
  Streamed out;
  for (int32_t id : ids) {
    auto chunk = detok->Push(id);
    EXPECT_TRUE(chunk.ok()) << chunk.status().ToString();
    EXPECT_TRUE(ValidateUtf8(*chunk).ok());
    out.chunks.push_back(*chunk);
    out.text += *chunk;
  }
  out.text += detok->Finish();
  out.stopped = detok->stopped();
  return out;
}

// What must have been emitted after the ids[0..n) (the reference described at the top).
std::string ReferenceEmitted(const Tokenizer& tok, const std::vector<int32_t>& prefix,
                             const std::vector<std::string>& stops, bool skip) {
  std::string bytes;
  for (int32_t id : prefix) {
    if (!(skip && tok.IsSpecial(id))) bytes += tok.TokenBytes(id);
  }
  // Drop a trailing unfinished (but so far valid) character.
  size_t cut = bytes.size();
  for (size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
    bool incomplete = false;
    const size_t bad =
        InvalidUtf8PrefixLength(std::string_view(bytes).substr(bytes.size() - back), &incomplete);
    if (bad == back && incomplete) cut = bytes.size() - back;
  }
  std::string text;
  AppendLossyUtf8(std::string_view(bytes).substr(0, cut), &text);
  size_t first = std::string::npos;
  for (const auto& s : stops) first = std::min(first, text.find(s));
  if (first != std::string::npos) return text.substr(0, first);
  size_t keep = 0;
  for (const auto& s : stops) {
    for (size_t n = 1; n < s.size() && n <= text.size(); ++n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) keep = std::max(keep, n);
    }
  }
  return text.substr(0, text.size() - keep);
}

TEST(StreamingDetokenizer, ConcatenationEqualsDecodeOnFixtureIds) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  for (const auto& c : testing::ReadJsonLines(testing::FixtureDir() + "/cases.jsonl")) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    for (bool skip : {false, true}) {
      const std::string want = tok->Decode(ids, skip).value();
      EXPECT_EQ(Stream(*tok, ids, {}, skip).text, want) << c["name"] << " skip=" << skip;
    }
  }
}

TEST(StreamingDetokenizer, ByteTokensEmitWholeCharactersOnly) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  // "€" = E2 82 AC as three byte tokens: nothing, nothing, then the character.
  const Streamed euro = Stream(*tok, BytesAsIds(*tok, "\xE2\x82\xAC"), {}, true);
  EXPECT_EQ(euro.chunks, (std::vector<std::string>{"", "", "\xE2\x82\xAC"}));
  // A sequence that can no longer become valid is U+FFFD at once, like Decode.
  const Streamed bad = Stream(*tok,
                              BytesAsIds(*tok,
                                         "\xE2\x82"
                                         "a\xFF"),
                              {}, true);
  EXPECT_EQ(bad.chunks, (std::vector<std::string>{"", "",
                                                  "\xEF\xBF\xBD"
                                                  "a",
                                                  "\xEF\xBF\xBD"}));
  // An unfinished character at the end becomes U+FFFD in Finish.
  EXPECT_EQ(Stream(*tok, BytesAsIds(*tok, "x\xF0\x9F"), {}, true).text, "x\xEF\xBF\xBD");
}

TEST(StreamingDetokenizer, StopStringSpanningTokensIsNeverEmitted) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> ids = tok->Encode("Hello world<|stop|> and more").value();
  const Streamed s = Stream(*tok, ids, {"<|stop|>"}, true);
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "Hello world");
  // A partial match that fails is released as ordinary text.
  EXPECT_EQ(Stream(*tok, tok->Encode("a <|sto b").value(), {"<|stop|>"}, true).text, "a <|sto b");
  // A stop string made of a multi-byte character fed byte by byte.
  const Streamed cjk = Stream(*tok,
                              BytesAsIds(*tok,
                                         "ab\xE4\xB8\xAD"
                                         "cd"),
                              {"\xE4\xB8\xAD"}, true);
  EXPECT_TRUE(cjk.stopped);
  EXPECT_EQ(cjk.text, "ab");
}

TEST(StreamingDetokenizer, EveryPrefixMatchesReference) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> stops = {"\n\n", "</answer>", "ab\xC3\xA9", "\xE2\x82\xAC!"};
  std::mt19937 rng(1234);
  const std::vector<std::string> pieces = {"a", "b",   "\xC3\xA9",    "</",           "answer",
                                           ">", "\n",  " ",           "\xE2\x82\xAC", "!",
                                           "<", "x y", "\xE4\xB8\xAD"};
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    // Encode normally, or as raw bytes (so characters split across tokens), alternately.
    const std::vector<int32_t> ids = trial % 2 ? tok->Encode(text).value() : BytesAsIds(*tok, text);
    auto detok = StreamingDetokenizer::Create(*tok, stops, true).value();
    std::string emitted;
    for (size_t i = 0; i < ids.size() && !detok.stopped(); ++i) {
      emitted += detok.Push(ids[i]).value();
      const std::vector<int32_t> prefix(ids.begin(), ids.begin() + i + 1);
      ASSERT_EQ(emitted, ReferenceEmitted(*tok, prefix, stops, true))
          << "trial " << trial << " text \"" << text << "\" after token " << i;
    }
  }
}

TEST(StreamingDetokenizer, RandomIdsEqualDecode) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(99);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<int32_t> ids(1 + rng() % 40);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % tok->n_ids());
    const bool skip = trial % 2;
    EXPECT_EQ(Stream(*tok, ids, {}, skip).text, tok->Decode(ids, skip).value()) << trial;
  }
}

TEST(StreamingDetokenizer, BadInput) {
  const Tokenizer* tok = testing::V3Tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(StreamingDetokenizer::Create(*tok, {"ok", "\xC3"}).ok());
  auto detok = StreamingDetokenizer::Create(*tok, {}).value();
  EXPECT_FALSE(detok.Push(-1).ok());
  EXPECT_FALSE(detok.Push(tok->n_ids()).ok());
  EXPECT_EQ(detok.Push(19923).value(), "Hello");  // still usable after an error
}

}  // namespace
}  // namespace deepinfer::tokenizer
