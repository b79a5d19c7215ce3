// Pieces the generation routes share: model-name check, prompt encoding with the context check,
// ids, logprob JSON, and the loop that waits for a generation's events.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/exchange.h"
#include "server/generation.h"
#include "server/server_context.h"

namespace deepinfer::server {

// An error when `model` is non-empty and not the served name.
std::optional<ApiError> CheckModel(const ServerContext& ctx, const std::string& model);

// Tokenizes `text` (special-token text such as BOS becomes its id) and checks that the prompt
// leaves room for one token in the context.
StatusOr<std::vector<int32_t>> EncodePrompt(const ServerContext& ctx, const std::string& text,
                                            bool add_special_tokens);
Status CheckPromptIds(const ServerContext& ctx, const std::vector<int32_t>& ids);

// "PREFIX-" + 24 random hex digits.
std::string RandomId(const std::string& prefix);
int64_t UnixNow();

// The token's text as a client sees it (raw bytes; a split character shows as U+FFFD when the
// JSON is written) and its bytes.
nlohmann::json TokenLogprobJson(const tokenizer::Tokenizer& tok, const engine::TokenLogprob& t);
// OpenAI chat logprobs entry: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}.
nlohmann::json ChatLogprobEntry(const tokenizer::Tokenizer& tok, const engine::SampleResult& s);

// Compiles `constraint` (ChatRequest::constraint) into spec->grammar; in thinking mode the
// constraint starts after </think>. Errors (400): an invalid schema / regex / grammar, no
// grammar support, thinking mode with a tokenizer that has no </think> token.
Status AttachGrammar(const ServerContext& ctx, const nlohmann::json& constraint, bool thinking,
                     GenerationSpec* spec);

// Validates the sampling parameters against the vocabulary and submits the generation; its
// events then arrive on `channel`. Errors: InvalidArgument (400), ResourceExhausted (429).
Status StartGeneration(ServerContext& ctx, GenerationSpec spec,
                       const std::shared_ptr<GenerationChannel>& channel);

// {"Retry-After": "1"} for 429 answers.
inline Exchange::Headers RetryAfter() { return {{"Retry-After", "1"}}; }

// Records one finished generation in the metrics.
void RecordGeneration(ServerContext& ctx, std::chrono::steady_clock::time_point arrival,
                      std::optional<std::chrono::steady_clock::time_point> first_token,
                      int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace deepinfer::server
