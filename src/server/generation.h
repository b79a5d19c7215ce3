// One API request's generation: one engine request with n samples (sample_index 0..n-1, one
// seed; the engine forks them from the first sample's prompt state) whose verdict and outputs
// come back to the connection through a GenerationChannel.
//
// Threads: the engine thread runs the request's stop checks and output callback; they
// detokenize (api::RequestText: per sample a StreamingDetokenizer, which also finds stop strings)
// and Push a GenEvent. The loop thread also sets the verdict of Engine::Add. Push and SetVerdict
// post a wake-up to the connection's executor, where the handler coroutine waits in Verdict() /
// Next(). Nothing else is shared between the two threads.
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
#include "server/rank_wire.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {

struct GenEvent {
  int index = 0;     // which of the n samples
  std::string text;  // new text (complete characters, stop strings cut)
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
  // Any thread, once: Engine::Add's verdict (Ok: accepted; else why it refused the request).
  void SetVerdict(Status verdict);
  // Connection executor only: waits for the verdict. Events pushed meanwhile stay for Next().
  net::awaitable<Status> Verdict();
  // Connection executor only: waits until at least one event is there and takes them all.
  net::awaitable<std::vector<GenEvent>> Next();
  // The same, but gives up after max_wait with no events (an empty list).
  net::awaitable<std::vector<GenEvent>> NextFor(std::chrono::steady_clock::duration max_wait);
  // Cancels every engine request of this generation (client gone, server draining).
  void Cancel();

  std::vector<std::shared_ptr<std::atomic<bool>>> cancel_flags;

 private:
  // The events stored so far (empty when none), taken under the lock.
  std::vector<GenEvent> Take();

  std::mutex mu_;
  std::vector<GenEvent> events_;
  std::optional<Status> verdict_;
  net::steady_timer timer_;
};

// Submits `request` (prompt, params with params.n samples, grammar) for `channel`: each sample's
// text goes through its own detokenizer, the outputs become GenEvents, and Engine::Add's verdict
// arrives on channel->Verdict(). Errors (nothing then stays queued, no verdict comes):
// InvalidArgument (a stop string that is not UTF-8), ResourceExhausted (queue full), Internal
// (shutting down). `remote` (the request's structured-output fields) lets it run on another
// rank of a server over MPI ranks (EngineLoop::Submit).
Status SubmitGeneration(EngineLoop* loop, const tokenizer::Tokenizer& tok, int32_t eos_id,
                        engine::Request request, const std::shared_ptr<GenerationChannel>& channel,
                        std::optional<RemoteForm> remote = std::nullopt);

}  // namespace deepinfer::server
