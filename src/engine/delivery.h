// The deliver stage of Engine::Step: sampled tokens reach their request's output channel.
//
// Tokens are queued as they are appended (Push) and delivered later (Deliver): with
// asynchronous scheduling, while the next forward call runs. Deliver runs, per token in append
// order, the request's stop-string check (it sees every token; its verdict counts from
// min_tokens on, like EOS and the stop ids) and then its on_output callback. A stop string ends
// the output at its token: later tokens of that sequence already queued (a step can append
// several with speculation) are dropped, and the sequence is returned for the engine to retire
// once no forward call uses it. A queued entry keeps its sequence alive until it is delivered.
// DeliverFinish is the one delivery of an output that ends outside the token stream (abort,
// error, capacity). Either way a request gets exactly one delivery with `finished` set.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "engine/sequence.h"

namespace deepinfer::engine {

class DeliveryQueue {
 public:
  // `finish`: the output ends at this token (n_output = seq->n_output() now).
  void Push(std::shared_ptr<Sequence> seq, SampleResult sample, std::optional<FinishReason> finish);
  // Delivers everything queued; returns the sequences a stop string ended (not yet retired).
  std::vector<Sequence*> Deliver();
  bool empty() const { return pending_.empty(); }

 private:
  struct Pending {
    std::shared_ptr<Sequence> seq;
    SampleResult sample;
    int64_t n_output = 0;
    std::optional<FinishReason> finish;
  };
  std::vector<Pending> pending_;
};

void DeliverFinish(const Sequence& seq, FinishReason reason, Status error);

}  // namespace deepinfer::engine
