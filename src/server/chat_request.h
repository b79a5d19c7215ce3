// API request bodies → what the server hands the engine. Pure functions of the body text: no
// engine, no tokenizer (the fuzz target fuzz/request_parser_fuzz.cc drives them directly).
//
// Chat requests of both APIs become one ChatRequest with OpenAI-shaped messages, which
// tokenizer::PrepareChatMessages + EncodeChatV41 render into the V4.1 prompt.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/sampling/sampling_params.h"

namespace deepinfer::server {

// Deepest JSON nesting a body may have (the parsers and the prompt renderer recurse).
inline constexpr int kMaxBodyNesting = 64;

// nlohmann members: their constructors throw only std::bad_alloc.
struct ChatRequest {                // NOLINT(bugprone-exception-escape)
  std::string model;                // empty when the body has none
  nlohmann::ordered_json messages;  // OpenAI-shaped: role, content, tool_calls, tool_call_id,
                                    // reasoning_content
  nlohmann::ordered_json tools;     // OpenAI tools [{"type":"function","function":{…}}] or null
  bool thinking = false;            // V4.1 thinking mode: the reply starts with reasoning
  nlohmann::ordered_json reasoning_effort;  // null, "low" / "high" / "max" or 1..100
  engine::SamplingParams params;            // params.n: the parallel samples
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // The structured-output fields given (response_format other than text, regex, grammar, or
  // the forced tool call: ForceToolCall), as an object for the grammar compiler; null when the
  // output is free.
  nlohmann::json constraint;
};

struct CompletionRequest {  // NOLINT(bugprone-exception-escape): as ChatRequest
  std::string model;
  std::string prompt_text;          // when the prompt is text
  std::vector<int32_t> prompt_ids;  // when it is a token list
  bool prompt_is_ids = false;
  engine::SamplingParams params;  // params.n: the parallel samples
  bool stream = false;
  bool include_usage = false;
  nlohmann::json constraint;  // as ChatRequest::constraint
};

// Parses JSON text with a nesting bound; errors are InvalidArgument ("malformed JSON: …").
StatusOr<nlohmann::ordered_json> ParseBody(std::string_view body);

// The three parsers start every request's sampling from `defaults` (the served model's
// generation_config.json, api/generation_config.h; the engine's defaults when none): a field the
// body gives replaces it. All but max_tokens: a request without one keeps it unset, and the
// session gives it the model's default clamped to what the context leaves after the prompt
// (GenerationSession::Run), as vLLM does; an explicit max_tokens too large for the context is
// still an error.
//
// POST /v1/chat/completions. Errors: InvalidArgument (wrong types, invalid values),
// Unimplemented (prompt_logprobs) → 400. Structured-output fields are only
// collected (ChatRequest::constraint); the handler compiles them.
StatusOr<ChatRequest> ParseOpenAiChat(const nlohmann::ordered_json& body,
                                      const engine::SamplingParams& defaults = {});
// POST /v1/completions (prompt: a string, a token list, or a one-element list of either;
// max_tokens defaults to the model's max_new_tokens (left unset here, as above), else to 16 as in
// the OpenAI API).
StatusOr<CompletionRequest> ParseOpenAiCompletion(const nlohmann::ordered_json& body,
                                                  const engine::SamplingParams& defaults = {});
// POST /v1/messages and /v1/messages/count_tokens (count_only: max_tokens not required).
StatusOr<ChatRequest> ParseAnthropicMessages(const nlohmann::ordered_json& body, bool count_only,
                                             const engine::SamplingParams& defaults = {});

// `defaults` less max_tokens: what the parsers start a request's sampling from.
engine::SamplingParams SamplingBase(const engine::SamplingParams& defaults);

// A forced tool call (OpenAI tool_choice "required" or a named function, Anthropic "any" /
// "tool"): sets request->constraint to {"tool_calls": {"functions": "<JSON text of the function
// objects>", "name": name or "" for any tool, "parallel": several calls allowed}}, which the
// grammar compiler turns into the DSML tool-call grammar (structured/tool_call_grammar.h).
// InvalidArgument: no tools, a name not among them, another constraint given.
Status ForceToolCall(const std::string& name, bool parallel, ChatRequest* request);

// The V4.1 prompt text of a chat request (BOS included as text).
StatusOr<std::string> RenderChatPrompt(const ChatRequest& request);

}  // namespace deepinfer::server
