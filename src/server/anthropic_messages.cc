// POST /v1/messages (Anthropic Messages API) and POST /v1/messages/count_tokens.
//
// Streaming event order: message_start, then per content block content_block_start,
// content_block_delta (thinking_delta / text_delta / input_json_delta)…, content_block_stop,
// then message_delta (stop_reason, stop_sequence, usage.output_tokens) and message_stop. A
// `ping` event follows message_start and is repeated while no other event goes out for
// kPingInterval, as Anthropic's API does.
// Blocks follow the output: thinking (thinking mode), text, then one tool_use per DSML call.
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

constexpr auto kPingInterval = std::chrono::seconds(5);

std::string Ping() { return SseEvent("ping", {{"type", "ping"}}); }

// Builds the content blocks and, when streaming, the events that open, fill and close them.
class BlockWriter {
 public:
  // Appends events to *out (may be null when not streaming).
  void Reasoning(const std::string& text, std::string* out) { Append("thinking", text, out); }
  void Text(const std::string& text, std::string* out) { Append("text", text, out); }
  void ToolUse(const tokenizer::ParsedToolCall& call, std::string* out) {
    Close(out);
    json input = json::parse(call.arguments, nullptr, false);
    if (input.is_discarded() || !input.is_object()) input = {{"arguments", call.arguments}};
    json block = {
        {"type", "tool_use"}, {"id", RandomId("toolu")}, {"name", call.name}, {"input", input}};
    if (out) {
      json start = block;
      start["input"] = json::object();
      *out += SseEvent(
          "content_block_start",
          {{"type", "content_block_start"}, {"index", blocks_.size()}, {"content_block", start}});
      *out +=
          SseEvent("content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", blocks_.size()},
                    {"delta", {{"type", "input_json_delta"}, {"partial_json", DumpJson(input)}}}});
      *out += SseEvent("content_block_stop",
                       {{"type", "content_block_stop"}, {"index", blocks_.size()}});
    }
    blocks_.push_back(std::move(block));
    has_tool_use_ = true;
  }
  void Close(std::string* out) {
    if (!open_) return;
    open_ = false;
    if (out) {
      *out += SseEvent("content_block_stop",
                       {{"type", "content_block_stop"}, {"index", blocks_.size() - 1}});
    }
  }
  const json& blocks() const { return blocks_; }
  bool has_tool_use() const { return has_tool_use_; }

 private:
  void Append(const std::string& type, const std::string& text, std::string* out) {
    if (text.empty()) return;
    if (!open_ || blocks_.back()["type"] != type) {
      Close(out);
      json block = type == "thinking"
                       ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                       : json{{"type", "text"}, {"text", ""}};
      if (out) {
        *out += SseEvent(
            "content_block_start",
            {{"type", "content_block_start"}, {"index", blocks_.size()}, {"content_block", block}});
      }
      blocks_.push_back(std::move(block));
      open_ = true;
    }
    blocks_.back()[type] = blocks_.back()[type].get<std::string>() + text;
    if (out) {
      *out +=
          SseEvent("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", blocks_.size() - 1},
                                           {"delta", {{"type", type + "_delta"}, {type, text}}}});
    }
  }

  json blocks_ = json::array();
  bool open_ = false;
  bool has_tool_use_ = false;
};

void ApplyDelta(const tokenizer::ParseDelta& d, BlockWriter* w, std::string* out) {
  w->Reasoning(d.reasoning_content, out);
  w->Text(d.content, out);
  for (const auto& call : d.tool_calls) w->ToolUse(call, out);
}

}  // namespace

net::awaitable<void> HandleMessages(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kAnthropic;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req = ParseAnthropicMessages(*body, /*count_only=*/false);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  StatusOr<std::string> prompt = RenderChatPrompt(*req);
  if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
  StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, *prompt, false);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
  const int64_t prompt_tokens = static_cast<int64_t>(ids->size());
  auto channel = std::make_shared<GenerationChannel>(co_await net::this_coro::executor);
  GenerationSpec spec;
  spec.prompt = *std::move(ids);
  spec.params = req->params;
  if (Status s = AttachGrammar(ctx, req->constraint, req->thinking, &spec); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s));
  }
  if (Status s = StartGeneration(ctx, std::move(spec), channel); !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s), RetryAfter());
  }
  if (!req->stream) CancelOnClose(ctx, ex, channel);

  const std::string id = RandomId("msg");
  tokenizer::OutputStreamParser parser(req->thinking);
  BlockWriter writer;
  bool streaming = false, finished = false;
  std::optional<std::chrono::steady_clock::time_point> first_token;
  engine::FinishReason finish = engine::FinishReason::kStop;
  Status error;
  std::string matched_stop;
  int64_t n_output = 0, cached = 0;
  json message = {{"id", id},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", ctx.model_name},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr}};
  while (!finished) {
    // Two statements, not `streaming ? co_await … : co_await …`: GCC 12 destroys the
    // temporaries of a conditional with co_await in both arms twice (a double free).
    std::vector<GenEvent> events;
    if (streaming) {
      events = co_await channel->NextFor(kPingInterval);
    } else {
      events = co_await channel->Next();
    }
    if (events.empty() && !co_await ex.SendEvent(Ping())) {
      CancelForDisconnect(ctx, *channel);
      co_return;
    }
    for (GenEvent& e : events) {
      if (e.rejected) {
        channel->Cancel();
        co_return co_await SendFailure(ex, style, streaming, ErrorFromStatus(e.error));
      }
      if (!e.tokens.empty() && !first_token) first_token = std::chrono::steady_clock::now();
      cached = std::max(cached, e.prefix_hit_tokens);
      n_output = std::max(n_output, e.n_output);
      std::string out;
      std::string* sink = req->stream ? &out : nullptr;
      if (req->stream && !streaming) {
        streaming = true;
        if (!co_await ex.StartStream()) {
          CancelForDisconnect(ctx, *channel);
          co_return;
        }
        json start = message;
        start["usage"] = {{"input_tokens", prompt_tokens},
                          {"output_tokens", 0},
                          {"cache_read_input_tokens", e.prefix_hit_tokens}};
        out += SseEvent("message_start", {{"type", "message_start"}, {"message", start}});
        out += Ping();
      }
      const bool cut_short = e.finished == engine::FinishReason::kLength;
      ApplyDelta(
          parser.Feed(cut_short ? tokenizer::TrimCutCharacter(e.text) : std::string_view(e.text)),
          &writer, sink);
      if (e.finished) {
        finished = true;
        finish = *e.finished;
        error = e.error;
        matched_stop = e.matched_stop;
        if (e.ended_by_eos) ApplyDelta(parser.Feed(tokenizer::kEosText), &writer, sink);
        Status verdict;
        ApplyDelta(parser.Finish(&verdict, finish == engine::FinishReason::kLength), &writer, sink);
        writer.Close(sink);
      }
      if (!out.empty() && !co_await ex.SendEvent(std::move(out))) {
        CancelForDisconnect(ctx, *channel);
        co_return;
      }
    }
  }
  ex.StopWatching();
  RecordGeneration(ctx, ex.arrival(), first_token, prompt_tokens, n_output);
  if (finish == engine::FinishReason::kError) {
    co_return co_await SendFailure(ex, style, req->stream,
                                   ErrorFromStatus(Internal(error.message())));
  }
  const char* stop_reason = finish == engine::FinishReason::kLength ? "max_tokens"
                            : writer.has_tool_use()                 ? "tool_use"
                            : !matched_stop.empty()                 ? "stop_sequence"
                                                                    : "end_turn";
  const json stop_sequence = matched_stop.empty() ? json() : json(matched_stop);
  if (req->stream) {
    std::string out =
        SseEvent("message_delta",
                 {{"type", "message_delta"},
                  {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
                  {"usage", {{"output_tokens", n_output}}}});
    out += SseEvent("message_stop", {{"type", "message_stop"}});
    co_await ex.SendEvent(std::move(out));
    co_return co_await ex.EndStream();
  }
  message["content"] = writer.blocks();
  message["stop_reason"] = stop_reason;
  message["stop_sequence"] = stop_sequence;
  message["usage"] = {{"input_tokens", prompt_tokens},
                      {"output_tokens", n_output},
                      {"cache_read_input_tokens", cached}};
  co_await ex.SendJson(200, message);
}

net::awaitable<void> HandleCountTokens(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kAnthropic;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req = ParseAnthropicMessages(*body, /*count_only=*/true);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  StatusOr<std::string> prompt = RenderChatPrompt(*req);
  if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
  StatusOr<std::vector<int32_t>> ids = ctx.tokenizer->Encode(*prompt, false);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));
  const json count = {{"input_tokens", ids->size()}};
  co_await ex.SendJson(200, count);
}

}  // namespace deepinfer::server
