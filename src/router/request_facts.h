// What the router reads from a generation request before it routes it: the prompt's tokens
// (rendered and tokenized exactly as a worker does: server/chat_request.h + the tokenizer) and
// the tokens of work it stands for. Never an error: a body the router cannot read is routed on
// estimates, and the worker answers it (e.g. its 400).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace deepinfer::router {

enum class GenerationApi { kChat, kCompletion, kMessages };

// Output tokens assumed for a request without max_tokens (a chat request may run to the end of
// the context; counting all of it would make one such request outweigh hundreds of others).
inline constexpr int64_t kAssumedOutputTokens = 512;

struct RequestFacts {
  std::vector<int32_t> prompt;  // empty: not tokenized (no tokenizer, or an unreadable body)
  int64_t prompt_tokens = 0;    // prompt.size(), or about a token per 4 bytes of body
  int64_t work_tokens = 0;      // prompt_tokens + max_tokens x n: the in-flight load it adds
};

// tokenizer: null = no tokenization (estimates only).
RequestFacts ReadRequestFacts(GenerationApi api, std::string_view body,
                              const tokenizer::Tokenizer* tokenizer);

}  // namespace deepinfer::router
