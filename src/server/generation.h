// One API request's generation: one engine request with n samples (sample_index 0..n-1, one
// seed; the engine forks them from the first sample's prompt state) whose outputs come back to
// the connection through a GenerationChannel.
//
// Threads: the engine thread runs each request's stop check and output callback; they
// detokenize (tokenizer::StreamingDetokenizer, which also finds stop strings) and Push a
// GenEvent. Push posts a wake-up to the connection's executor, where the handler coroutine
// waits in Next(). Nothing else is shared between the two threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "server/asio.h"
#include "server/engine_loop.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {

struct GenEvent {
  int index = 0;          // which of the n samples
  bool rejected = false;  // Engine::Add refused the request: `error` says why
  std::string text;       // new text (complete characters, stop strings cut)
  std::vector<int32_t> tokens;
  std::vector<engine::SampleResult> samples;  // per token when logprobs
  // params.prompt_logprobs, on the first event of the request: entry i for prompt token i + 1.
  std::vector<engine::SampleResult> prompt_logprobs;
  std::optional<engine::FinishReason> finished;
  bool ended_by_eos = false;  // finished by the EOS token (the chat parser wants to see it)
  std::string matched_stop;   // the stop string that ended it, if one did
  Status error;
  int64_t n_output = 0;
  int64_t prefix_hit_tokens = 0;
  uint64_t seed = 0;
};

class GenerationChannel : public std::enable_shared_from_this<GenerationChannel> {
 public:
  explicit GenerationChannel(const net::any_io_executor& executor) : timer_(executor) {}

  // Any thread.
  void Push(GenEvent event);
  // Connection executor only: waits until at least one event is there and takes them all.
  net::awaitable<std::vector<GenEvent>> Next();
  // The same, but gives up after max_wait with no events (an empty list).
  net::awaitable<std::vector<GenEvent>> NextFor(std::chrono::steady_clock::duration max_wait);
  // Cancels every engine request of this generation (client gone, server draining).
  void Cancel();

  std::vector<std::shared_ptr<std::atomic<bool>>> cancel_flags;

 private:
  std::mutex mu_;
  std::vector<GenEvent> events_;
  net::steady_timer timer_;
};

struct GenerationSpec {
  std::vector<int32_t> prompt;
  engine::SamplingParams params;  // params.n is set from n
  int n = 1;
  bool skip_special_tokens = true;
  std::shared_ptr<const structured::CompiledGrammar> grammar;  // structured output, or null
  std::optional<int32_t> grammar_start_token;                  // thinking mode: </think>
};

// Submits the request. On an error (queue full, shutting down) nothing stays queued.
Status SubmitGeneration(EngineLoop* loop, const tokenizer::Tokenizer& tok, int32_t eos_id,
                        GenerationSpec spec, const std::shared_ptr<GenerationChannel>& channel);

}  // namespace deepinfer::server
