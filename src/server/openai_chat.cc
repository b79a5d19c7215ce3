// POST /v1/chat/completions: render the V4.1 prompt, run n samples, parse each output into
// reasoning_content / content / tool_calls (tokenizer::OutputStreamParser) and answer as one
// chat.completion or as a stream of chat.completion.chunk events ending in "data: [DONE]".
#include <optional>
#include <string>
#include <vector>

#include "server/chat_request.h"
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
  int64_t n_output = 0;
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
  c->n_output = std::max(c->n_output, e.n_output);
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

}  // namespace

net::awaitable<void> HandleChatCompletions(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req = ParseOpenAiChat(*body);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  StatusOr<std::string> prompt = RenderChatPrompt(*req);
  if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
  StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, *prompt, /*add_special_tokens=*/false);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
  const int64_t prompt_tokens = static_cast<int64_t>(ids->size());

  auto channel = std::make_shared<GenerationChannel>(co_await net::this_coro::executor);
  GenerationSpec spec;
  spec.prompt = *std::move(ids);
  spec.params = req->params;
  spec.n = req->n;
  if (Status s = AttachGrammar(ctx, req->constraint, req->thinking, &spec); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s));
  }
  if (Status s = StartGeneration(ctx, std::move(spec), channel); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s), RetryAfter());
  }
  if (!req->stream) CancelOnClose(ctx, ex, channel);

  const OpenAiResponse response(ctx, "chatcmpl", "chat.completion", "chat.completion.chunk",
                                req->include_usage);
  const bool logprobs = req->params.logprobs;
  std::vector<Choice> choices;
  choices.reserve(req->n);
  for (int i = 0; i < req->n; ++i) choices.emplace_back(req->thinking);
  int n_finished = 0;
  int64_t cached = 0;
  json prompt_logprobs;  // params.prompt_logprobs: from the first event that carries them
  bool streaming = false;
  std::optional<std::chrono::steady_clock::time_point> first_token;
  auto chunk = [&response](json choice_list) { return response.Chunk(std::move(choice_list)); };

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
      Choice& c = choices[e.index];
      json new_calls = json::array(), new_logprobs = json::array();
      tokenizer::ParseDelta d = Apply(ctx, e, logprobs, &c, &new_calls, &new_logprobs);
      if (c.finished) ++n_finished;
      if (!req->stream) continue;
      if (!streaming) {
        streaming = true;
        if (!co_await ex.StartStream()) {
          CancelForDisconnect(ctx, *channel);
          co_return;
        }
      }
      std::string out;
      if (!c.started) {
        c.started = true;
        out += SseData(chunk(json::array({{{"index", e.index},
                                           {"delta", {{"role", "assistant"}, {"content", ""}}},
                                           {"logprobs", nullptr},
                                           {"finish_reason", nullptr}}})));
      }
      json delta = json::object();
      if (!d.reasoning_content.empty()) delta["reasoning_content"] = d.reasoning_content;
      if (!d.content.empty()) delta["content"] = d.content;
      if (!new_calls.empty()) delta["tool_calls"] = new_calls;
      if (!delta.empty() || !new_logprobs.empty()) {
        out += SseData(
            chunk(json::array({{{"index", e.index},
                                {"delta", delta},
                                {"logprobs", logprobs ? json{{"content", new_logprobs}} : json()},
                                {"finish_reason", nullptr}}})));
      }
      if (c.finished) {
        if (c.finish == engine::FinishReason::kError) {
          out += SseData(ErrorBody(style, ErrorFromStatus(Internal(c.error.message()))));
        }
        out += SseData(chunk(json::array({{{"index", e.index},
                                           {"delta", json::object()},
                                           {"logprobs", nullptr},
                                           {"finish_reason", FinishName(c)}}})));
      }
      if (!out.empty() && !co_await ex.SendEvent(std::move(out))) {
        CancelForDisconnect(ctx, *channel);  // the client went away: free its pages now
        co_return;
      }
    }
  }

  ex.StopWatching();
  int64_t completion_tokens = 0;
  for (const Choice& c : choices) completion_tokens += c.n_output;
  RecordGeneration(ctx, ex.arrival(), first_token, prompt_tokens, completion_tokens);
  const json usage = OpenAiUsage(prompt_tokens, completion_tokens, cached);
  if (req->stream) {
    co_await ex.SendEvent(response.StreamEnd(usage));
    co_return co_await ex.EndStream();
  }
  for (const Choice& c : choices) {
    if (c.finish == engine::FinishReason::kError) {
      co_return co_await ex.SendError(style, ErrorFromStatus(Internal(c.error.message())));
    }
  }
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    json message = {{"role", "assistant"}};
    message["content"] = c.content.empty() && !c.tool_calls.empty() ? json() : json(c.content);
    if (req->thinking) message["reasoning_content"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      json calls = c.tool_calls;
      for (auto& call : calls) call.erase("index");
      message["tool_calls"] = calls;
    }
    list.push_back({{"index", i},
                    {"message", message},
                    {"logprobs", logprobs ? json{{"content", c.logprobs}} : json()},
                    {"finish_reason", FinishName(c)}});
  }
  json out = response.Final(std::move(list), usage);
  if (req->params.prompt_logprobs) {
    // vLLM's place for them in a chat response: top level, over the rendered prompt's tokens.
    out["prompt_logprobs"] = prompt_logprobs.is_null() ? json::array({nullptr}) : prompt_logprobs;
  }
  co_await ex.SendJson(200, out);
}

}  // namespace deepinfer::server
