// Pieces the generation routes share: model-name check, prompt encoding with the context check,
// ids, logprob JSON, the OpenAI envelope and usage, failures, disconnects and metrics (the
// generation itself, from submission to the last byte, is generation_session.h).
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
// vLLM's `prompt_logprobs`: [null, then per prompt token 1..n-1 an object keyed by token id (as
// a string) holding that token and its top alternatives as {logprob, rank (1 = most likely;
// present when the token is among the alternatives), decoded_token}].
nlohmann::json PromptLogprobsJson(const tokenizer::Tokenizer& tok,
                                  const std::vector<engine::SampleResult>& prompt_logprobs);

// {"Retry-After": "1"} for 429 answers.
inline Exchange::Headers RetryAfter() { return {{"Retry-After", "1"}}; }

// The envelope both OpenAI generation routes answer in: {id, object, created, model, choices,
// usage}. Streaming chunks carry "usage": null when include_usage is on (the usage chunk at the
// end has it and empty choices), then "data: [DONE]".
class OpenAiResponse {
 public:
  OpenAiResponse(const ServerContext& ctx, const std::string& id_prefix, std::string object,
                 std::string chunk_object, bool include_usage);
  // One streaming chunk with these choices.
  nlohmann::json Chunk(nlohmann::json choices) const;
  // The non-streaming response.
  nlohmann::json Final(nlohmann::json choices, nlohmann::json usage) const;
  // The end of a stream: the usage chunk (with include_usage) and "data: [DONE]".
  std::string StreamEnd(const nlohmann::json& usage) const;

 private:
  std::string id_, object_, chunk_object_, model_;
  int64_t created_;
  bool include_usage_;
};

// OpenAI usage: prompt, completion and total tokens, prompt_tokens_details.cached_tokens.
nlohmann::json OpenAiUsage(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached);

// Answers a failure: the error response, or inside a started stream an error event (OpenAI:
// a data line; Anthropic: an `error` event) and the end of the stream.
net::awaitable<void> SendFailure(Exchange& ex, ApiStyle style, bool streaming,
                                 const ApiError& error);

// The client went away: cancels the generation's engine requests (their pages are freed at
// the engine's next step) and counts it in the metrics.
void CancelForDisconnect(ServerContext& ctx, GenerationChannel& channel);
// A non-streaming answer is being computed: cancel it if the client closes the connection
// meanwhile (Exchange::WatchClose). The exchange stops watching when the answer is sent.
void CancelOnClose(ServerContext& ctx, Exchange& ex,
                   const std::shared_ptr<GenerationChannel>& channel);

// Records one finished generation in the metrics.
void RecordGeneration(ServerContext& ctx, std::chrono::steady_clock::time_point arrival,
                      std::optional<std::chrono::steady_clock::time_point> first_token,
                      int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace deepinfer::server
