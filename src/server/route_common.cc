#include "server/route_common.h"

#include <chrono>
#include <random>
#include <utility>

namespace deepinfer::server {

std::optional<ApiError> CheckModel(const ServerContext& ctx, const std::string& model) {
  if (model.empty() || model == ctx.model_name) return std::nullopt;
  ApiError e = BadRequest(
      "The model '" + model + "' does not exist; this server serves '" + ctx.model_name + "'",
      "model");
  e.code = "model_not_found";
  return e;
}

Status CheckPromptIds(const ServerContext& ctx, const std::vector<int32_t>& ids) {
  if (ids.empty()) return InvalidArgument("the prompt is empty");
  if (static_cast<int64_t>(ids.size()) >= ctx.max_context) {
    return InvalidArgument("the prompt has " + std::to_string(ids.size()) +
                           " tokens; this model's context is " + std::to_string(ctx.max_context) +
                           " tokens (prompt and output)");
  }
  for (int32_t id : ids) {
    if (id < 0 || id >= ctx.vocab_size) {
      return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                             std::to_string(ctx.vocab_size) + ")");
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> EncodePrompt(const ServerContext& ctx, const std::string& text,
                                            bool add_special_tokens) {
  DI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ctx.tokenizer->Encode(text, add_special_tokens));
  DI_RETURN_IF_ERROR(CheckPromptIds(ctx, ids));
  return ids;
}

std::string RandomId(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kHex[] = "0123456789abcdef";
  std::string id = prefix + "-";
  for (int i = 0; i < 24; ++i) id += kHex[rng() % 16];
  return id;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json TokenLogprobJson(const tokenizer::Tokenizer& tok, const engine::TokenLogprob& t) {
  const std::string bytes = tok.HasId(t.token) ? tok.TokenBytes(t.token) : std::string();
  nlohmann::json b = nlohmann::json::array();
  for (unsigned char c : bytes) b.push_back(static_cast<int>(c));
  return {{"token", bytes}, {"logprob", t.logprob}, {"bytes", b}};
}

nlohmann::json ChatLogprobEntry(const tokenizer::Tokenizer& tok, const engine::SampleResult& s) {
  nlohmann::json e = TokenLogprobJson(tok, {s.token, s.logprob});
  nlohmann::json top = nlohmann::json::array();
  for (const auto& t : s.top) top.push_back(TokenLogprobJson(tok, t));
  e["top_logprobs"] = top;
  return e;
}

nlohmann::json PromptLogprobsJson(const tokenizer::Tokenizer& tok,
                                  const std::vector<engine::SampleResult>& prompt_logprobs) {
  nlohmann::json out = nlohmann::json::array({nullptr});
  for (const engine::SampleResult& s : prompt_logprobs) {
    nlohmann::json position = nlohmann::json::object();
    auto entry = [&](int32_t token, float logprob) {
      nlohmann::json e = {{"logprob", logprob},
                          {"decoded_token", tok.HasId(token) ? tok.TokenBytes(token) : ""}};
      for (size_t r = 0; r < s.top.size(); ++r) {
        if (s.top[r].token == token) e["rank"] = r + 1;
      }
      position[std::to_string(token)] = std::move(e);
    };
    entry(s.token, s.logprob);
    for (const engine::TokenLogprob& t : s.top) {
      if (t.token != s.token) entry(t.token, t.logprob);
    }
    out.push_back(std::move(position));
  }
  return out;
}

OpenAiResponse::OpenAiResponse(const ServerContext& ctx, const std::string& id_prefix,
                               std::string object, std::string chunk_object, bool include_usage)
    : id_(RandomId(id_prefix)),
      object_(std::move(object)),
      chunk_object_(std::move(chunk_object)),
      model_(ctx.model_name),
      created_(UnixNow()),
      include_usage_(include_usage) {}

nlohmann::json OpenAiResponse::Chunk(nlohmann::json choices) const {
  nlohmann::json c = {{"id", id_},
                      {"object", chunk_object_},
                      {"created", created_},
                      {"model", model_},
                      {"choices", std::move(choices)}};
  if (include_usage_) c["usage"] = nullptr;
  return c;
}

nlohmann::json OpenAiResponse::Final(nlohmann::json choices, nlohmann::json usage) const {
  return {{"id", id_},
          {"object", object_},
          {"created", created_},
          {"model", model_},
          {"choices", std::move(choices)},
          {"usage", std::move(usage)}};
}

std::string OpenAiResponse::StreamEnd(const nlohmann::json& usage) const {
  std::string out;
  if (include_usage_) {
    nlohmann::json c = Chunk(nlohmann::json::array());
    c["usage"] = usage;
    out += SseData(c);
  }
  return out + "data: [DONE]\n\n";
}

nlohmann::json OpenAiUsage(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

net::awaitable<void> SendFailure(Exchange& ex, ApiStyle style, bool streaming,
                                 const ApiError& error) {
  if (!streaming) co_return co_await ex.SendError(style, error);
  const nlohmann::json body = ErrorBody(style, error);
  co_await ex.SendEvent(style == ApiStyle::kAnthropic ? SseEvent("error", body) : SseData(body));
  co_await ex.EndStream();
}

void CancelForDisconnect(ServerContext& ctx, GenerationChannel& channel) {
  channel.Cancel();
  ctx.metrics->CountCancelled(1);
}

void CancelOnClose(ServerContext& ctx, Exchange& ex,
                   const std::shared_ptr<GenerationChannel>& channel) {
  ex.WatchClose([&ctx, channel] { CancelForDisconnect(ctx, *channel); });
}

void RecordGeneration(ServerContext& ctx, std::chrono::steady_clock::time_point arrival,
                      std::optional<std::chrono::steady_clock::time_point> first_token,
                      int64_t prompt_tokens, int64_t completion_tokens) {
  const auto now = std::chrono::steady_clock::now();
  const double e2e = std::chrono::duration<double>(now - arrival).count();
  const double ttft =
      first_token ? std::chrono::duration<double>(*first_token - arrival).count() : e2e;
  ctx.metrics->ObserveGeneration(ttft, e2e, prompt_tokens, completion_tokens);
}

}  // namespace deepinfer::server
