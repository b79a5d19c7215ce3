#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer::engine {

void Sequence::UpdateBlockKeys(int64_t block_tokens, bool key_prompt_rows) {
  AppendBlockKeys(tokens, prompt_len, block_tokens, key_prompt_rows, &block_keys);
}

bool Scheduler::Before(const Sequence* a, const Sequence* b) {
  const int pa = a->request.priority, pb = b->request.priority;
  return pa != pb ? pa < pb : a->arrival < b->arrival;
}

void Scheduler::AddWaiting(Sequence* seq) {
  seq->status = SequenceStatus::kWaiting;
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), seq, Before), seq);
}

void Scheduler::AddRunning(Sequence* seq) {
  CHECK(has_running_slot()) << "no running slot for a forked sequence";
  seq->status = SequenceStatus::kRunning;
  running_.push_back(seq);
}

void Scheduler::ReleasePages(Sequence* seq) {
  for (int32_t p : seq->pages) kv_->Release(p);
  seq->pages.clear();
  seq->registered_blocks = 0;
}

void Scheduler::Remove(Sequence* seq) {
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  ReleasePages(seq);
  seq->runner.reset();
}

void Scheduler::Preempt(Sequence* seq) {
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  ReleasePages(seq);
  seq->runner.reset();
  seq->computed = 0;
  ++seq->preemptions;
  ++n_preemptions_;
  AddWaiting(seq);
}

bool Scheduler::Reserve(Sequence* seq, int64_t positions) {
  const int64_t p = kv_->block_tokens();
  const size_t need = static_cast<size_t>((positions + p - 1) / p);
  while (seq->pages.size() < need) {
    const int32_t page = kv_->Allocate();
    if (page < 0) return false;
    seq->pages.push_back(page);
  }
  return true;
}

int64_t Scheduler::occupied_slots() const {
  int64_t n = static_cast<int64_t>(running_.size());
  for (const Sequence* s : running_) n += static_cast<int64_t>(s->fork_ids.size());
  return n;
}

bool Scheduler::Admit(Sequence* seq, int64_t budget, ScheduledBatch* batch) {
  const int64_t occupied = occupied_slots();
  if (occupied > 0 &&
      occupied + 1 + static_cast<int64_t>(seq->fork_ids.size()) > options_.max_running) {
    return false;
  }
  const int64_t p = kv_->block_tokens();
  const int64_t len = static_cast<int64_t>(seq->tokens.size());
  seq->UpdateBlockKeys(p, key_prompt_rows_);
  // Keep at least one token to compute: its logits choose the next token. Prompt logprobs need
  // the logits of every prompt position, so such a request computes its whole prompt, unless a
  // handed-over tail carries them (context parallelism).
  const bool scores_prompt = seq->request.params.prompt_logprobs.has_value();
  const bool tail_scored = seq->tail_in && seq->tail_in->prompt_logprobs_k.has_value();
  const int64_t max_hit_blocks = scores_prompt && !tail_scored ? 0 : (len - 1) / p;
  const std::span<const BlockKey> keys(seq->block_keys.data(), static_cast<size_t>(max_hit_blocks));
  int64_t hit_blocks = kv_->Peek(keys);
  int64_t h = hit_blocks * p;
  // A handed-over tail continues the hit to all but the last prompt token when every complete
  // page before it is here (the prepare stage restores it: StartRunnerSequence).
  if (seq->tail_in) {
    const auto tail = static_cast<int64_t>(seq->tail_in->tokens.size());
    if (seq->computed == 0 && seq->n_output() == 0 && hit_blocks == max_hit_blocks &&
        tail / p == hit_blocks && tail == len - 1) {
      h = tail;
    } else {
      seq->tail_in.reset();
      if (scores_prompt) hit_blocks = h = 0;
    }
  }
  const int64_t n = std::min({len - h, options_.prefill_chunk, budget});
  // Cheap pre-check; Reserve below decides (hit pages taken off the LRU shrink the pool).
  const int64_t new_pages = (h + n + p - 1) / p - hit_blocks;
  if (kv_->available() < new_pages) return false;
  seq->pages = kv_->Match(keys.subspan(0, static_cast<size_t>(hit_blocks)),
                          static_cast<int64_t>(keys.size()));
  CHECK_EQ(static_cast<int64_t>(seq->pages.size()), hit_blocks);
  seq->registered_blocks = hit_blocks;
  if (!Reserve(seq, h + n)) {
    ReleasePages(seq);
    return false;
  }
  // The hit positions are in the pages; the prepare stage gives the sequence its model state
  // (Engine::StartAdmitted: a runner sequence that adopts them).
  seq->computed = h;
  seq->prefix_hit_tokens = std::max(seq->prefix_hit_tokens, h);
  seq->status = SequenceStatus::kRunning;
  running_.push_back(seq);
  batch->entries.push_back({seq, n});
  batch->n_tokens += n;
  return true;
}

ScheduledBatch Scheduler::Schedule() {
  ScheduledBatch batch;
  int64_t budget = options_.max_batch_tokens;
  std::stable_sort(running_.begin(), running_.end(), Before);
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* seq = running_[i];
    // A decoding sequence with drafts (engine/spec/) also feeds them for verification.
    const int64_t drafts = seq->remaining() == 1 ? seq->draft_rows : 0;
    const int64_t n =
        std::min({seq->remaining() + drafts, options_.prefill_chunk + drafts, budget});
    CHECK_GT(n, 0) << "a running sequence with nothing to compute";
    bool preempted_self = false;
    while (!Reserve(seq, seq->computed + n)) {
      Sequence* victim = running_.back();
      batch.preempted.push_back(victim);
      Preempt(victim);
      if (victim == seq) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    batch.entries.push_back({seq, n});
    batch.n_tokens += n;
    budget -= n;
    ++i;
  }
  if (!batch.preempted.empty()) return batch;  // no admissions while the pool is short
  while (!waiting_.empty() && budget > 0 && occupied_slots() < options_.max_running) {
    Sequence* seq = waiting_.front();
    if (!Admit(seq, budget, &batch)) break;
    waiting_.pop_front();
    budget -= batch.entries.back().n_tokens;
  }
  return batch;
}

}  // namespace deepinfer::engine
