// POST /v1/chat/completions: render the V4.1 prompt, run n samples, parse each output into
// reasoning_content / content / tool_calls (tokenizer::OutputStreamParser) and answer as one
// chat.completion or as a stream of chat.completion.chunk events ending in "data: [DONE]".
#include <optional>
#include <string>
#include <vector>

#include "server/chat_request.h"
#include "server/generation_session.h"
#include "server/route_common.h"
#include "server/routes.h"
#include "tokenizer/chat/chat_tokens.h"
#include "tokenizer/chat/output_stream_parser.h"

namespace deepinfer::server {
namespace {

using nlohmann::json;

struct Choice {
  explicit Choice(bool thinking) : parser(thinking) {}
  tokenizer::OutputStreamParser parser;
  bool started = false;  // the role chunk went out
  bool finished = false;
  std::string content, reasoning;
  json tool_calls = json::array();
  json logprobs = json::array();
  engine::FinishReason finish = engine::FinishReason::kStop;
  Status error;
};

json ToolCallJson(const tokenizer::ParsedToolCall& c, int index) {
  return {{"index", index},
          {"id", RandomId("call")},
          {"type", "function"},
          {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

std::string FinishName(const Choice& c) {
  switch (c.finish) {
    case engine::FinishReason::kStop:
      return c.tool_calls.empty() ? "stop" : "tool_calls";
    case engine::FinishReason::kLength:
      return "length";
    case engine::FinishReason::kAbort:
      return "abort";
    case engine::FinishReason::kError:
      return "error";
  }
  return "stop";
}

// Applies one event to its choice; returns the parser's delta (tool calls get their ids here).
tokenizer::ParseDelta Apply(const ServerContext& ctx, const GenEvent& e, bool logprobs, Choice* c,
                            json* new_calls, json* new_logprobs) {
  const bool cut_short = e.finished == engine::FinishReason::kLength;
  tokenizer::ParseDelta d =
      c->parser.Feed(cut_short ? tokenizer::TrimCutCharacter(e.text) : std::string_view(e.text));
  if (e.finished) {
    c->finished = true;
    c->finish = *e.finished;
    c->error = e.error;
    if (e.ended_by_eos) {
      tokenizer::ParseDelta eos = c->parser.Feed(tokenizer::kEosText);
      d.reasoning_content += eos.reasoning_content;
      d.content += eos.content;
      d.tool_calls.insert(d.tool_calls.end(), eos.tool_calls.begin(), eos.tool_calls.end());
    }
    // A rejected output (length cut, random text) is flushed leniently as content.
    Status verdict;
    tokenizer::ParseDelta rest = c->parser.Finish(&verdict, cut_short);
    d.reasoning_content += rest.reasoning_content;
    d.content += rest.content;
    d.tool_calls.insert(d.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
  }
  c->content += d.content;
  c->reasoning += d.reasoning_content;
  for (const auto& call : d.tool_calls) {
    json j = ToolCallJson(call, static_cast<int>(c->tool_calls.size()));
    c->tool_calls.push_back(j);
    new_calls->push_back(j);
  }
  if (logprobs) {
    for (const auto& s : e.samples) {
      json entry = ChatLogprobEntry(*ctx.tokenizer, s);
      c->logprobs.push_back(entry);
      new_logprobs->push_back(entry);
    }
  }
  return d;
}

// chat.completion / chat.completion.chunk: per sample a role chunk, delta chunks (reasoning,
// content, tool calls, logprobs) and a finish chunk; an engine error is a data line before it.
class ChatRenderer : public GenerationRenderer {
 public:
  ChatRenderer(const ServerContext& ctx, const ChatRequest& req)
      : ctx_(ctx),
        response_(ctx, "chatcmpl", "chat.completion", "chat.completion.chunk", req.include_usage),
        logprobs_(req.params.logprobs),
        prompt_logprobs_(req.params.prompt_logprobs.has_value()),
        thinking_(req.thinking) {
    choices_.reserve(req.params.n);
    for (int i = 0; i < req.params.n; ++i) choices_.emplace_back(req.thinking);
  }

  void OnEvent(const GenEvent& e, std::string* stream) override {
    Choice& c = choices_[e.index];
    json new_calls = json::array(), new_logprobs = json::array();
    const tokenizer::ParseDelta d = Apply(ctx_, e, logprobs_, &c, &new_calls, &new_logprobs);
    if (!stream) return;
    if (!c.started) {
      c.started = true;
      *stream += SseData(Chunk(json::array({{{"index", e.index},
                                             {"delta", {{"role", "assistant"}, {"content", ""}}},
                                             {"logprobs", nullptr},
                                             {"finish_reason", nullptr}}})));
    }
    json delta = json::object();
    if (!d.reasoning_content.empty()) delta["reasoning_content"] = d.reasoning_content;
    if (!d.content.empty()) delta["content"] = d.content;
    if (!new_calls.empty()) delta["tool_calls"] = new_calls;
    if (!delta.empty() || !new_logprobs.empty()) {
      *stream += SseData(
          Chunk(json::array({{{"index", e.index},
                              {"delta", delta},
                              {"logprobs", logprobs_ ? json{{"content", new_logprobs}} : json()},
                              {"finish_reason", nullptr}}})));
    }
    if (c.finished) {
      if (c.finish == engine::FinishReason::kError) {
        *stream +=
            SseData(ErrorBody(ApiStyle::kOpenAi, ErrorFromStatus(Internal(c.error.message()))));
      }
      *stream += SseData(Chunk(json::array({{{"index", e.index},
                                             {"delta", json::object()},
                                             {"logprobs", nullptr},
                                             {"finish_reason", FinishName(c)}}})));
    }
  }

  std::optional<ApiError> Failure(bool streaming) const override {
    return FirstSampleFailure(streaming, choices_);
  }

  std::string StreamEnd(const GenerationTotals& t) const override {
    return response_.StreamEnd(Usage(t));
  }

  json Body(const GenerationTotals& t) const override {
    json list = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const Choice& c = choices_[i];
      json message = {{"role", "assistant"}};
      message["content"] = c.content.empty() && !c.tool_calls.empty() ? json() : json(c.content);
      if (thinking_) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        json calls = c.tool_calls;
        for (auto& call : calls) call.erase("index");
        message["tool_calls"] = calls;
      }
      list.push_back({{"index", i},
                      {"message", message},
                      {"logprobs", logprobs_ ? json{{"content", c.logprobs}} : json()},
                      {"finish_reason", FinishName(c)}});
    }
    json out = response_.Final(std::move(list), Usage(t));
    if (prompt_logprobs_) {
      // vLLM's place for them in a chat response: top level, over the rendered prompt's tokens.
      out["prompt_logprobs"] = PromptLogprobsJson(*ctx_.tokenizer, t.prompt_logprobs);
    }
    return out;
  }

 private:
  json Chunk(json choice_list) const { return response_.Chunk(std::move(choice_list)); }
  static json Usage(const GenerationTotals& t) {
    return OpenAiUsage(t.prompt_tokens, t.completion_tokens, t.cached_tokens);
  }

  const ServerContext& ctx_;
  const OpenAiResponse response_;
  const bool logprobs_, prompt_logprobs_, thinking_;
  std::vector<Choice> choices_;
};

}  // namespace

net::awaitable<void> HandleChatCompletions(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req = ParseOpenAiChat(*body, ctx.sampling_defaults);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  StatusOr<std::string> prompt = RenderChatPrompt(*req);
  if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
  StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, *prompt, /*add_special_tokens=*/false);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));

  ChatRenderer renderer(ctx, *req);
  GenerationSession session(ctx, ex, style, renderer);
  GenerationInput input = ChatGenerationInput(std::move(*ids), *req);
  co_await session.Run(std::move(input));
}

}  // namespace deepinfer::server
