// POST /v1/completions: a raw prompt (text or token ids), n samples, text out; logprobs in the
// legacy shape {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}.
#include <optional>
#include <string>
#include <vector>

#include "server/chat_request.h"
#include "server/generation_session.h"
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

// text_completion: one chunk per event with new text, logprobs or the finish reason.
class CompletionRenderer : public GenerationRenderer {
 public:
  CompletionRenderer(const ServerContext& ctx, const CompletionRequest& req)
      : ctx_(ctx),
        response_(ctx, "cmpl", "text_completion", "text_completion", req.include_usage),
        logprobs_(req.params.logprobs),
        prompt_logprobs_(req.params.prompt_logprobs.has_value()),
        choices_(req.params.n) {}

  void OnEvent(const GenEvent& e, std::string* stream) override {
    CompletionChoice& c = choices_[e.index];
    c.text += e.text;
    json lp = logprobs_ ? LegacyLogprobs(*ctx_.tokenizer, e.samples, &c) : json();
    if (e.finished) {
      c.finished = true;
      c.finish = *e.finished;
      c.error = e.error;
    }
    if (!stream) return;
    json fin = c.finished ? json(FinishName(c.finish)) : json();
    if (e.text.empty() && e.samples.empty() && !c.finished) return;
    json choice = {{"index", e.index}, {"text", e.text}, {"logprobs", lp}, {"finish_reason", fin}};
    *stream += SseData(response_.Chunk(json::array({std::move(choice)})));
  }

  std::optional<ApiError> Failure(bool streaming) const override {
    return FirstSampleFailure(streaming, choices_);
  }

  std::string StreamEnd(const GenerationTotals& t) const override {
    return response_.StreamEnd(OpenAiUsage(t.prompt_tokens, t.completion_tokens, t.cached_tokens));
  }

  json Body(const GenerationTotals& t) const override {
    json list = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const CompletionChoice& c = choices_[i];
      json lp;
      if (logprobs_) {
        lp = {{"tokens", c.tokens},
              {"token_logprobs", c.token_logprobs},
              {"top_logprobs", c.top},
              {"text_offset", c.offsets}};
      }
      list.push_back({{"index", i},
                      {"text", c.text},
                      {"logprobs", lp},
                      {"finish_reason", FinishName(c.finish)}});
      if (prompt_logprobs_) {
        // A one-token prompt has no scored position: [null].
        list.back()["prompt_logprobs"] = PromptLogprobsJson(*ctx_.tokenizer, t.prompt_logprobs);
      }
    }
    return response_.Final(std::move(list),
                           OpenAiUsage(t.prompt_tokens, t.completion_tokens, t.cached_tokens));
  }

 private:
  const ServerContext& ctx_;
  const OpenAiResponse response_;
  const bool logprobs_, prompt_logprobs_;
  std::vector<CompletionChoice> choices_;
};

}  // namespace

net::awaitable<void> HandleCompletions(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<CompletionRequest> req = ParseOpenAiCompletion(*body, ctx.sampling_defaults);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  GenerationInput input;
  if (req->prompt_is_ids) {
    if (Status s = CheckPromptIds(ctx, req->prompt_ids); !s.ok()) {
      co_return co_await ex.SendError(style, ErrorFromStatus(s));
    }
    input.prompt = req->prompt_ids;
  } else {
    StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, req->prompt_text, true);
    if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
    input.prompt = *std::move(ids);
  }
  input.params = req->params;
  input.constraint = req->constraint;
  input.stream = req->stream;

  CompletionRenderer renderer(ctx, *req);
  GenerationSession session(ctx, ex, style, renderer);
  co_await session.Run(std::move(input));
}

}  // namespace deepinfer::server
