// GET /v1/models, POST /tokenize, POST /detokenize, GET /health, GET /metrics.
#include <string>
#include <vector>

#include "server/chat_request.h"
#include "server/route_common.h"
#include "server/routes.h"

namespace deepinfer::server {

using nlohmann::json;

net::awaitable<void> HandleModels(ServerContext& ctx, Exchange& ex) {
  json model = {{"id", ctx.model_name},
                {"object", "model"},
                {"created", ctx.created},
                {"owned_by", "deepinfer"},
                {"max_model_len", ctx.max_context}};
  const json list = {{"object", "list"}, {"data", json::array({model})}};
  co_await ex.SendJson(200, list);
}

// {"prompt": text, "add_special_tokens"?: bool} or {"messages": [...], chat fields…}
//   → {"tokens": [...], "count": n, "max_model_len": context}
net::awaitable<void> HandleTokenize(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  std::string text;
  bool add_special = true;
  if (body->contains("messages")) {
    StatusOr<ChatRequest> req = ParseOpenAiChat(*body, ctx.sampling_defaults);
    if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
    StatusOr<std::string> prompt = RenderChatPrompt(*req);
    if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
    text = *std::move(prompt);
    add_special = false;
  } else {
    auto p = body->find("prompt");
    if (p == body->end() || !p->is_string()) {
      co_return co_await ex.SendError(style, BadRequest("prompt must be a string", "prompt"));
    }
    text = p->get<std::string>();
    if (auto a = body->find("add_special_tokens"); a != body->end() && !a->is_null()) {
      if (!a->is_boolean()) {
        co_return co_await ex.SendError(
            style, BadRequest("add_special_tokens must be a boolean", "add_special_tokens"));
      }
      add_special = a->get<bool>();
    }
  }
  StatusOr<std::vector<int32_t>> ids = ctx.tokenizer->Encode(text, add_special);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
  const json out = {{"tokens", *ids}, {"count", ids->size()}, {"max_model_len", ctx.max_context}};
  co_await ex.SendJson(200, out);
}

// {"tokens": [...], "skip_special_tokens"?: bool} → {"prompt": text}
net::awaitable<void> HandleDetokenize(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  auto t = body->find("tokens");
  if (t == body->end() || !t->is_array()) {
    co_return co_await ex.SendError(style, BadRequest("tokens must be a list of ids", "tokens"));
  }
  std::vector<int32_t> ids;
  for (const auto& v : *t) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      co_return co_await ex.SendError(style,
                                      BadRequest("tokens must be non-negative integers", "tokens"));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  bool skip = false;
  if (auto s = body->find("skip_special_tokens"); s != body->end() && s->is_boolean()) {
    skip = s->get<bool>();
  }
  StatusOr<std::string> text = ctx.tokenizer->Decode(ids, skip);
  if (!text.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(text.status()));
  const json out = {{"prompt", *text}};
  co_await ex.SendJson(200, out);
}

net::awaitable<void> HandleHealth(ServerContext& ctx, Exchange& ex) {
  co_await ex.Send(200, "application/json", "{\"status\":\"ok\"}");
}

net::awaitable<void> HandleMetrics(ServerContext& ctx, Exchange& ex) {
  std::string text = ctx.metrics->Render(ctx.loop->Snapshot(), ReadCpuTimes());
  if (ctx.pd != nullptr) RenderPdCounters(ctx.pd->counters(), &text);
  co_await ex.Send(200, "text/plain; version=0.0.4", std::move(text));
}

}  // namespace deepinfer::server
