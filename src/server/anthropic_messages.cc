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
#include "server/generation_session.h"
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

// One message (n = 1): content blocks from the output parser; streaming, the events above.
class MessagesRenderer : public GenerationRenderer {
 public:
  MessagesRenderer(const ServerContext& ctx, const ChatRequest& req, int64_t prompt_tokens)
      : parser_(req.thinking),
        prompt_tokens_(prompt_tokens),
        message_({{"id", RandomId("msg")},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", ctx.model_name},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr}}) {}

  std::string StreamStart(const GenEvent& first) override {
    json start = message_;
    start["usage"] = {{"input_tokens", prompt_tokens_},
                      {"output_tokens", 0},
                      {"cache_read_input_tokens", first.prefix_hit_tokens}};
    return SseEvent("message_start", {{"type", "message_start"}, {"message", start}}) + Ping();
  }

  void OnEvent(const GenEvent& e, std::string* stream) override {
    const bool cut_short = e.finished == engine::FinishReason::kLength;
    ApplyDelta(
        parser_.Feed(cut_short ? tokenizer::TrimCutCharacter(e.text) : std::string_view(e.text)),
        &writer_, stream);
    if (!e.finished) return;
    finish_ = *e.finished;
    error_ = e.error;
    matched_stop_ = e.matched_stop;
    if (e.ended_by_eos) ApplyDelta(parser_.Feed(tokenizer::kEosText), &writer_, stream);
    Status verdict;
    ApplyDelta(parser_.Finish(&verdict, cut_short), &writer_, stream);
    writer_.Close(stream);
  }

  std::optional<std::chrono::steady_clock::duration> KeepAliveInterval() const override {
    return kPingInterval;
  }
  std::string KeepAlive() const override { return Ping(); }

  // An engine error ends a stream with an `error` event, or is the whole answer.
  std::optional<ApiError> Failure(bool /*streaming*/) const override {
    if (finish_ != engine::FinishReason::kError) return std::nullopt;
    return ErrorFromStatus(Internal(error_.message()));
  }

  std::string StreamEnd(const GenerationTotals& t) const override {
    std::string out =
        SseEvent("message_delta",
                 {{"type", "message_delta"},
                  {"delta", {{"stop_reason", StopReason()}, {"stop_sequence", StopSequence()}}},
                  {"usage", {{"output_tokens", t.completion_tokens}}}});
    return out + SseEvent("message_stop", {{"type", "message_stop"}});
  }

  json Body(const GenerationTotals& t) const override {
    json message = message_;
    message["content"] = writer_.blocks();
    message["stop_reason"] = StopReason();
    message["stop_sequence"] = StopSequence();
    message["usage"] = {{"input_tokens", t.prompt_tokens},
                        {"output_tokens", t.completion_tokens},
                        {"cache_read_input_tokens", t.cached_tokens}};
    return message;
  }

 private:
  const char* StopReason() const {
    return finish_ == engine::FinishReason::kLength ? "max_tokens"
           : writer_.has_tool_use()                 ? "tool_use"
           : !matched_stop_.empty()                 ? "stop_sequence"
                                                    : "end_turn";
  }
  json StopSequence() const { return matched_stop_.empty() ? json() : json(matched_stop_); }

  tokenizer::OutputStreamParser parser_;
  BlockWriter writer_;
  const int64_t prompt_tokens_;
  const json message_;
  engine::FinishReason finish_ = engine::FinishReason::kStop;
  Status error_;
  std::string matched_stop_;
};

}  // namespace

net::awaitable<void> HandleMessages(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kAnthropic;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req =
      ParseAnthropicMessages(*body, /*count_only=*/false, ctx.sampling_defaults);
  if (!req.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(req.status()));
  if (auto e = CheckModel(ctx, req->model)) co_return co_await ex.SendError(style, *e);
  StatusOr<std::string> prompt = RenderChatPrompt(*req);
  if (!prompt.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(prompt.status()));
  StatusOr<std::vector<int32_t>> ids = EncodePrompt(ctx, *prompt, false);
  if (!ids.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(ids.status()));

  MessagesRenderer renderer(ctx, *req, static_cast<int64_t>(ids->size()));
  GenerationSession session(ctx, ex, style, renderer);
  GenerationInput input = ChatGenerationInput(std::move(*ids), *req);
  co_await session.Run(std::move(input));
}

net::awaitable<void> HandleCountTokens(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kAnthropic;
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  StatusOr<ChatRequest> req =
      ParseAnthropicMessages(*body, /*count_only=*/true, ctx.sampling_defaults);
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
