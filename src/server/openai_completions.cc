// POST /v1/completions: a raw prompt (text or token ids), n samples, text out; logprobs in the
// legacy shape {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}.
#include <optional>
#include <string>
#include <vector>

#include "server/chat_request.h"
#include "server/route_common.h"
#include "server/routes.h"

namespace deepinfer::server {
namespace {

using nlohmann::json;

struct CompletionChoice {
  std::string text;
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  int64_t offset = 0;  // bytes of text so far (text_offset of the next token)
  bool finished = false;
  engine::FinishReason finish = engine::FinishReason::kStop;
  Status error;
  int64_t n_output = 0;
};

const char* FinishName(engine::FinishReason r) {
  return r == engine::FinishReason::kLength ? "length" : engine::FinishReasonName(r);
}

// Legacy logprobs of the tokens of one event.
json LegacyLogprobs(const tokenizer::Tokenizer& tok, const std::vector<engine::SampleResult>& ss,
                    CompletionChoice* c) {
  json l = {{"tokens", json::array()},
            {"token_logprobs", json::array()},
            {"top_logprobs", json::array()},
            {"text_offset", json::array()}};
  for (const auto& s : ss) {
    const std::string piece = tok.HasId(s.token) ? tok.TokenBytes(s.token) : std::string();
    json top = json::object();
    for (const auto& t : s.top) {
      top[tok.HasId(t.token) ? tok.TokenBytes(t.token) : std::string()] = t.logprob;
    }
    l["tokens"].push_back(piece);
    l["token_logprobs"].push_back(s.logprob);
    l["top_logprobs"].push_back(top);
    l["text_offset"].push_back(c->offset);
    c->offset += static_cast<int64_t>(piece.size());
    c->tokens.push_back(piece);
    c->token_logprobs.push_back(s.logprob);
    c->top.push_back(top);
    c->offsets.push_back(l["text_offset"].back());
  }
  return l;
}

}  // namespace

net::awaitable<void> HandleCompletions(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<CompletionRequest> req = ParseOpenAiCompletion(*body);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  GenerationSpec spec;
  if (req->prompt_is_ids) {
    if (Status s = CheckPromptIds(ctx, req->prompt_ids); !s.ok()) {
      co_return co_await ex.SendError(style, ErrorFromStatus(s));
    }
    spec.prompt = req->prompt_ids;
  } else {
    StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, req->prompt_text, true);
    if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
    spec.prompt = *std::move(ids);
  }
  const int64_t prompt_tokens = static_cast<int64_t>(spec.prompt.size());
  spec.params = req->params;
  spec.n = req->n;
  if (Status s = AttachGrammar(ctx, req->constraint, false, &spec); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s));
  }
  auto channel = std::make_shared<GenerationChannel>(co_await net::this_coro::executor);
  if (Status s = StartGeneration(ctx, std::move(spec), channel); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s), RetryAfter());
  }
  if (!req->stream) CancelOnClose(ctx, ex, channel);

  const OpenAiResponse response(ctx, "cmpl", "text_completion", "text_completion",
                                req->include_usage);
  const bool logprobs = req->params.logprobs;
  std::vector<CompletionChoice> choices(req->n);
  int n_finished = 0;
  int64_t cached = 0;
  json prompt_logprobs;  // params.prompt_logprobs: from the first event that carries them
  bool streaming = false;
  std::optional<std::chrono::steady_clock::time_point> first_token;
  while (n_finished < req->n) {
    std::vector<GenEvent> events = co_await channel->Next();
    for (GenEvent& e : events) {
      if (e.rejected) {
        channel->Cancel();
        co_return co_await SendFailure(ex, style, streaming, ErrorFromStatus(e.error));
      }
      if (!e.tokens.empty() && !first_token) first_token = std::chrono::steady_clock::now();
      cached = std::max(cached, e.prefix_hit_tokens);
      if (!e.prompt_logprobs.empty() && prompt_logprobs.is_null()) {
        prompt_logprobs = PromptLogprobsJson(*ctx.tokenizer, e.prompt_logprobs);
      }
      CompletionChoice& c = choices[e.index];
      c.text += e.text;
      c.n_output = std::max(c.n_output, e.n_output);
      json lp = logprobs ? LegacyLogprobs(*ctx.tokenizer, e.samples, &c) : json();
      if (e.finished) {
        c.finished = true;
        c.finish = *e.finished;
        c.error = e.error;
        ++n_finished;
      }
      if (!req->stream) continue;
      if (!streaming) {
        streaming = true;
        if (!co_await ex.StartStream()) {
          CancelForDisconnect(ctx, *channel);
          co_return;
        }
      }
      json fin = c.finished ? json(FinishName(c.finish)) : json();
      if (e.text.empty() && e.samples.empty() && !c.finished) continue;
      json choice = {
          {"index", e.index}, {"text", e.text}, {"logprobs", lp}, {"finish_reason", fin}};
      std::string event = SseData(response.Chunk(json::array({std::move(choice)})));
      if (!co_await ex.SendEvent(std::move(event))) {
        CancelForDisconnect(ctx, *channel);
        co_return;
      }
    }
  }
  ex.StopWatching();
  int64_t completion_tokens = 0;
  for (const auto& c : choices) completion_tokens += c.n_output;
  RecordGeneration(ctx, ex.arrival(), first_token, prompt_tokens, completion_tokens);
  const json usage = OpenAiUsage(prompt_tokens, completion_tokens, cached);
  if (req->stream) {
    co_await ex.SendEvent(response.StreamEnd(usage));
    co_return co_await ex.EndStream();
  }
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const CompletionChoice& c = choices[i];
    if (c.finish == engine::FinishReason::kError) {
      co_return co_await ex.SendError(style, ErrorFromStatus(Internal(c.error.message())));
    }
    json lp;
    if (logprobs) {
      lp = {{"tokens", c.tokens},
            {"token_logprobs", c.token_logprobs},
            {"top_logprobs", c.top},
            {"text_offset", c.offsets}};
    }
    list.push_back({{"index", i},
                    {"text", c.text},
                    {"logprobs", lp},
                    {"finish_reason", FinishName(c.finish)}});
    if (req->params.prompt_logprobs) {
      // A one-token prompt has no scored position: [null].
      list.back()["prompt_logprobs"] =
          prompt_logprobs.is_null() ? json::array({nullptr}) : prompt_logprobs;
    }
  }
  co_await ex.SendJson(200, response.Final(std::move(list), usage));
}

}  // namespace deepinfer::server
