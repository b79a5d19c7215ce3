// libFuzzer target: arbitrary bytes as an HTTP request body for the server's request parsers
// (src/server/chat_request.h) and the chat prompt renderer behind them.
//
// Input: byte 0 picks the parser (0 chat completions, 1 completions, 2 Anthropic messages,
// 3 Anthropic count_tokens); the rest is the body. Promises checked:
//   - no parser crashes or hits UB (ASan/UBSan watch), whatever the bytes: bad input is a Status;
//   - an accepted request has valid sampling parameters (SamplingParams::Validate), so n (params.n,
//     the samples of its one engine request) is in [1, kMaxParallelSamples];
//   - rendering an accepted chat request either fails with a Status or gives a prompt that
//     starts with the BOS text.
// Built with clang -fsanitize=fuzzer when DEEPINFER_BUILD_FUZZ=ON (fuzz/CMakeLists.txt); the
// normal build replays fuzz/corpus/request_parser through it with fuzz/replay_main.cc.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "server/chat_request.h"
#include "tokenizer/chat/chat_tokens.h"

namespace {

using deepinfer::server::ChatRequest;

void CheckChat(const ChatRequest& r) {
  CHECK(r.params.Validate(0).ok()) << r.params.Validate(0).message();
  CHECK(r.params.n >= 1 && r.params.n <= deepinfer::engine::kMaxParallelSamples);
  auto prompt = deepinfer::server::RenderChatPrompt(r);
  if (prompt.ok()) CHECK(prompt->starts_with(deepinfer::tokenizer::kBosText));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 4;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto json = deepinfer::server::ParseBody(body);
  if (!json.ok()) return 0;
  switch (which) {
    case 0:
      if (auto r = deepinfer::server::ParseOpenAiChat(*json); r.ok()) CheckChat(*r);
      break;
    case 1:
      if (auto r = deepinfer::server::ParseOpenAiCompletion(*json); r.ok()) {
        CHECK(r->params.Validate(0).ok());
        CHECK(r->params.n >= 1 && r->params.n <= deepinfer::engine::kMaxParallelSamples);
        CHECK(r->prompt_is_ids ? !r->prompt_ids.empty() : !r->prompt_text.empty());
      }
      break;
    default:
      if (auto r = deepinfer::server::ParseAnthropicMessages(*json, which == 3); r.ok()) {
        CheckChat(*r);
      }
      break;
  }
  return 0;
}
