#include "router/request_facts.h"

#include <optional>
#include <string>

#include "server/chat_request.h"

namespace deepinfer::router {
namespace {

// The prompt text (chat: rendered, BOS as text) or ids, and the sampling parameters.
struct ParsedPrompt {
  std::string text;
  bool add_special_tokens = false;
  std::vector<int32_t> ids;
  bool is_ids = false;
  engine::SamplingParams params;
};

std::optional<ParsedPrompt> ParsePrompt(GenerationApi api, std::string_view body) {
  StatusOr<nlohmann::ordered_json> json = server::ParseBody(body);
  if (!json.ok()) return std::nullopt;
  ParsedPrompt p;
  if (api == GenerationApi::kCompletion) {
    StatusOr<server::CompletionRequest> req = server::ParseOpenAiCompletion(*json);
    if (!req.ok()) return std::nullopt;
    p.params = req->params;
    p.is_ids = req->prompt_is_ids;
    p.ids = std::move(req->prompt_ids);
    p.text = std::move(req->prompt_text);
    p.add_special_tokens = true;  // as the completions route encodes text
    return p;
  }
  StatusOr<server::ChatRequest> req = api == GenerationApi::kChat
                                          ? server::ParseOpenAiChat(*json)
                                          : server::ParseAnthropicMessages(*json, false);
  if (!req.ok()) return std::nullopt;
  StatusOr<std::string> text = server::RenderChatPrompt(*req);
  if (!text.ok()) return std::nullopt;
  p.params = req->params;
  p.text = *std::move(text);
  return p;
}

}  // namespace

RequestFacts ReadRequestFacts(GenerationApi api, std::string_view body,
                              const tokenizer::Tokenizer* tokenizer) {
  RequestFacts facts;
  facts.prompt_tokens = static_cast<int64_t>(body.size() / 4);
  int64_t output = kAssumedOutputTokens;
  if (std::optional<ParsedPrompt> p = ParsePrompt(api, body)) {
    output = p->params.max_tokens.value_or(kAssumedOutputTokens) * std::max(p->params.n, 1);
    if (p->is_ids) {
      facts.prompt = std::move(p->ids);
    } else if (tokenizer != nullptr) {
      StatusOr<std::vector<int32_t>> ids = tokenizer->Encode(p->text, p->add_special_tokens);
      if (ids.ok()) facts.prompt = *std::move(ids);
    }
    if (!facts.prompt.empty()) facts.prompt_tokens = static_cast<int64_t>(facts.prompt.size());
  }
  facts.work_tokens = facts.prompt_tokens + output;
  return facts;
}

}  // namespace deepinfer::router
