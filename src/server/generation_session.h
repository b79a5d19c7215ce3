// GenerationSession: one generation request (chat completions, completions, Anthropic messages)
// from submission to the last byte of its answer. What the three generation routes share lives
// here; what differs between the API families is a GenerationRenderer.
//
// Run(input), in order:
//   1. grammar (api::AttachGrammar over ServerContext::structured) and submission
//      (SubmitGeneration). An error answers at once: 400 (bad constraint, no grammar support),
//      429 with Retry-After: 1 (queue full), 500 (shutting down).
//   2. Engine::Add's verdict (GenerationChannel::Verdict), awaited before any byte of the answer:
//      a refused request (Add validates the sampling parameters against the vocabulary, the
//      prompt plus max_tokens against the context, ...) answers its error, e.g. 400, and never
//      starts a stream.
//   3. the events: each goes to the renderer. Streaming, the SSE response starts with the first
//      event (StreamStart's bytes lead its own) and every event's bytes go out as one chunk; the
//      renderer's keep-alive goes out when no event came for its interval. Non-streaming, the
//      answer waits for every sample.
//   4. once every sample finished: the metrics (RecordGeneration), then the renderer's Failure
//      (SendFailure: an error response, or in a stream an error event and the end), or its normal
//      end: StreamEnd + the last chunk, or Body as a 200 JSON response.
//
// Exactly once: every path answers the exchange exactly once (an error, a JSON body, or a stream
// closed by EndStream), except after a disconnect, when nothing more is written.
// Disconnect: a stream write that fails, or (non-streaming, Exchange::WatchClose) the client
// closing the connection while the answer is computed, cancels the generation's engine requests
// (CancelForDisconnect: their pages are freed at the engine's next step; counted in the metrics);
// Run then returns without answering.
// Threads: Run and the renderer run on the connection's executor only; the engine thread reaches
// the session only through the GenerationChannel.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "server/api_error.h"
#include "server/asio.h"
#include "server/exchange.h"
#include "server/generation.h"
#include "server/server_context.h"

namespace deepinfer::server {

// What the session counts for the epilogue.
struct GenerationTotals {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // over every sample
  int64_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  // params.prompt_logprobs: from the first event that carries them (empty: none came).
  std::vector<engine::SampleResult> prompt_logprobs;
};

// How one API family renders a generation. Called on the connection's executor, in event order.
class GenerationRenderer {
 public:
  virtual ~GenerationRenderer() = default;

  // Applies one event to its sample's state. Streaming, appends the SSE bytes it gives (maybe
  // none: then no chunk goes out) to *stream; non-streaming, stream is null.
  virtual void OnEvent(const GenEvent& event, std::string* stream) = 0;
  // Streaming: the bytes that open the stream, sent with the first event's.
  virtual std::string StreamStart(const GenEvent& /*first*/) { return {}; }
  // Streaming: sent when no event came for KeepAliveInterval (none by default).
  virtual std::optional<std::chrono::steady_clock::duration> KeepAliveInterval() const {
    return std::nullopt;
  }
  virtual std::string KeepAlive() const { return {}; }

  // Once every sample finished: the error to answer instead of the normal end, if any.
  virtual std::optional<ApiError> Failure(bool streaming) const = 0;
  // The normal end of a stream (sent before the last chunk).
  virtual std::string StreamEnd(const GenerationTotals& totals) const = 0;
  // The non-streaming answer (200).
  virtual nlohmann::json Body(const GenerationTotals& totals) const = 0;
};

// What a handler hands the session once it has the prompt.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann members; their moves throw only bad_alloc
struct GenerationInput {
  std::vector<int32_t> prompt;
  engine::SamplingParams params;  // params.n samples
  nlohmann::json constraint;      // structured-output fields (ChatRequest::constraint) or null
  bool thinking = false;          // the constraint starts after </think>
  bool stream = false;
};

// A chat request's input (ChatRequest, the Anthropic messages request: params, constraint,
// thinking, stream). Build it into a named local, not a braced temporary inside the co_await
// expression: GCC 12 destroys such a temporary twice.
template <typename ChatLikeRequest>
GenerationInput ChatGenerationInput(std::vector<int32_t>&& prompt, const ChatLikeRequest& req) {
  return GenerationInput{.prompt = std::move(prompt),
                         .params = req.params,
                         .constraint = req.constraint,
                         .thinking = req.thinking,
                         .stream = req.stream};
}

// The Failure of the OpenAI renderers: a stream reported its errors inline; a whole answer
// fails with its first failed sample's error. Choice: any type with `finish` and `error`.
template <typename Choice>
std::optional<ApiError> FirstSampleFailure(bool streaming, const std::vector<Choice>& choices) {
  if (streaming) return std::nullopt;
  for (const Choice& c : choices) {
    if (c.finish == engine::FinishReason::kError) {
      return ErrorFromStatus(Internal(c.error.message()));
    }
  }
  return std::nullopt;
}

// The prefill leg of a disaggregated request (Exchange::handoff_to set; pd_routes.cc): computes
// the prompt (one token, greedy), hands its pages to the decode instance and answers 200 with
// the HandoffReport as JSON; 502 when the hand-off failed (the error names the decode instance
// and the cause), the route's own errors for a bad request.
net::awaitable<void> RunPrefillLeg(ServerContext& ctx, Exchange& ex, ApiStyle style,
                                   GenerationInput input);

class GenerationSession {
 public:
  // ctx, ex and renderer outlive Run.
  GenerationSession(ServerContext& ctx, Exchange& ex, ApiStyle style, GenerationRenderer& renderer)
      : ctx_(ctx), ex_(ex), style_(style), renderer_(renderer) {}

  net::awaitable<void> Run(GenerationInput input);

 private:
  ServerContext& ctx_;
  Exchange& ex_;
  ApiStyle style_;
  GenerationRenderer& renderer_;
};

}  // namespace deepinfer::server
