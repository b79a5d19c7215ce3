#include "engine/delivery.h"

#include <map>
#include <span>
#include <utility>

namespace deepinfer::engine {
namespace {

// What every delivery of `seq` carries, whatever else it holds.
RequestOutput OutputOf(const Sequence& seq, int64_t n_output, std::optional<FinishReason> finish) {
  RequestOutput out;
  out.request_id = seq.id;
  out.sample_index = seq.request.sample_index;
  out.n_output = n_output;
  out.finished = finish;
  out.seed = seq.seed;
  out.prefix_hit_tokens = seq.prefix_hit_tokens;
  if (finish) out.tail = seq.tail_out;
  return out;
}

}  // namespace

void DeliveryQueue::Push(std::shared_ptr<Sequence> seq, SampleResult sample,
                         std::optional<FinishReason> finish) {
  const int64_t n_output = seq->n_output();
  pending_.push_back({std::move(seq), std::move(sample), n_output, finish});
}

std::vector<Sequence*> DeliveryQueue::Deliver() {
  std::vector<Pending> pending;
  pending.swap(pending_);
  std::vector<Sequence*> stopped;
  // Sequences a stop string ended in this call, at which output count.
  std::map<const Sequence*, int64_t> cut;
  for (Pending& d : pending) {
    Sequence* seq = d.seq.get();
    if (const auto it = cut.find(seq); it != cut.end() && d.n_output > it->second) continue;
    std::optional<FinishReason> finish = d.finish;
    if (seq->request.stop_check) {
      const bool hit = seq->request.stop_check(
          std::span<const int32_t>(seq->tokens)
              .subspan(static_cast<size_t>(seq->prompt_len), static_cast<size_t>(d.n_output)));
      if (hit && !finish && d.n_output >= seq->request.params.min_tokens) {
        finish = FinishReason::kStop;
        seq->finish = finish;
        cut[seq] = d.n_output;
        // (A sequence whose later token already ended it is retired: nothing more to do.)
        if (seq->status != SequenceStatus::kFinished) stopped.push_back(seq);
      }
    }
    if (seq->request.on_output) {
      RequestOutput out = OutputOf(*seq, d.n_output, finish);
      out.new_tokens = {d.sample.token};
      if (d.n_output == 1 && seq->request.params.prompt_logprobs) {
        out.prompt_logprobs = seq->prompt_logprobs;
      }
      if (seq->request.params.logprobs) out.samples.push_back(std::move(d.sample));
      seq->request.on_output(out);
    }
  }
  return stopped;
}

void DeliverFinish(const Sequence& seq, FinishReason reason, Status error) {
  if (!seq.request.on_output) return;
  RequestOutput out = OutputOf(seq, seq.n_output(), reason);
  out.error = std::move(error);
  seq.request.on_output(out);
}

}  // namespace deepinfer::engine
