// The router reads a prompt's tokens exactly as a worker does (chat rendered by the server's
// parsers, completions text with special tokens, token-id prompts as given) and its work tokens.
#include "router/request_facts.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/check.h"
#include "server/chat_request.h"

namespace deepinfer::router {
namespace {

const tokenizer::Tokenizer& Tok() {
  static const std::unique_ptr<tokenizer::Tokenizer> tok = [] {
    StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t =
        tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    CHECK(t.ok()) << t.status().ToString();
    return std::move(*t);
  }();
  return *tok;
}

TEST(RequestFacts, ChatPromptIsTheRenderedPrompt) {
  const std::string body =
      R"({"model": "m", "max_tokens": 20, "n": 2, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there, how are you?"}]})";
  const RequestFacts f = ReadRequestFacts(GenerationApi::kChat, body, &Tok());
  const server::ChatRequest req = *server::ParseOpenAiChat(*server::ParseBody(body));
  const std::vector<int32_t> expected = *Tok().Encode(*server::RenderChatPrompt(req), false);
  EXPECT_EQ(f.prompt, expected);
  EXPECT_EQ(f.prompt_tokens, static_cast<int64_t>(expected.size()));
  EXPECT_EQ(f.work_tokens, f.prompt_tokens + 40);
}

TEST(RequestFacts, AnthropicMessages) {
  const std::string body =
      R"({"model": "m", "max_tokens": 7, "system": "S", "messages": [{"role": "user", "content": "Hi"}]})";
  const RequestFacts f = ReadRequestFacts(GenerationApi::kMessages, body, &Tok());
  const server::ChatRequest req = *server::ParseAnthropicMessages(*server::ParseBody(body), false);
  EXPECT_EQ(f.prompt, *Tok().Encode(*server::RenderChatPrompt(req), false));
  EXPECT_EQ(f.work_tokens, f.prompt_tokens + 7);
}

TEST(RequestFacts, CompletionTextAndIds) {
  const RequestFacts text = ReadRequestFacts(
      GenerationApi::kCompletion, R"({"prompt": "The quick brown fox", "max_tokens": 5})", &Tok());
  EXPECT_EQ(text.prompt, *Tok().Encode("The quick brown fox", true));
  EXPECT_EQ(text.work_tokens, text.prompt_tokens + 5);
  // Ids need no tokenizer.
  const RequestFacts ids =
      ReadRequestFacts(GenerationApi::kCompletion, R"({"prompt": [5, 6, 7, 8]})", nullptr);
  EXPECT_EQ(ids.prompt, (std::vector<int32_t>{5, 6, 7, 8}));
  EXPECT_EQ(ids.work_tokens, 4 + 16);  // completions default max_tokens 16
}

TEST(RequestFacts, EstimatesWithoutTokenizerOrForABadBody) {
  const std::string body = R"({"prompt": "abcdefghijklmnopqrstuvwxyz0123456789", "max_tokens": 3})";
  const RequestFacts f = ReadRequestFacts(GenerationApi::kCompletion, body, nullptr);
  EXPECT_TRUE(f.prompt.empty());
  EXPECT_EQ(f.prompt_tokens, static_cast<int64_t>(body.size() / 4));
  EXPECT_EQ(f.work_tokens, f.prompt_tokens + 3);
  const RequestFacts bad = ReadRequestFacts(GenerationApi::kChat, "{not json", &Tok());
  EXPECT_TRUE(bad.prompt.empty());
  EXPECT_EQ(bad.work_tokens, bad.prompt_tokens + kAssumedOutputTokens);
  const RequestFacts no_max = ReadRequestFacts(
      GenerationApi::kChat, R"({"messages": [{"role": "user", "content": "x"}]})", &Tok());
  EXPECT_FALSE(no_max.prompt.empty());
  EXPECT_EQ(no_max.work_tokens, no_max.prompt_tokens + kAssumedOutputTokens);
}

}  // namespace
}  // namespace deepinfer::router
