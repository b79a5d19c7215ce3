// Scheduler: which sequences run in the next step and how many tokens each consumes.
//
// Policy (continuous batching, docs/engine_contract.md):
//   * order: priority ascending, then arrival (FCFS); running sequences keep their slot;
//   * a step holds at most `max_batch_tokens` tokens: every running sequence first (one decode
//     token, or its next prefill chunk of at most `prefill_chunk` tokens), then waiting
//     sequences are admitted while the budget, `max_running` and the page pool allow;
//   * a request with n parallel samples counts n running slots from its admission (its forks
//     start when its prompt is computed);
//   * admission matches the prompt's full blocks against the prefix cache (keeping at least one
//     token to compute) and adopts the hit pages; a sequence given a handed-over tail
//     (Sequence::tail_in, page_handoff.h) whose complete pages all hit is admitted at the tail's
//     end instead (its last prompt token left to compute);
//   * pages are reserved before the step for every position it consumes; when the pool runs
//     dry, the running sequence that comes last in the order is preempted by recompute: its
//     pages are released and it waits again at the front, keeping its output, which it
//     re-prefills on resumption (so output is neither lost nor repeated).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/sequence.h"

namespace deepinfer::engine {

struct SchedulerOptions {
  int64_t max_batch_tokens = 2048;
  int64_t prefill_chunk = 512;
  int64_t max_running = 64;
};

struct ScheduledEntry {
  Sequence* seq = nullptr;
  int64_t n_tokens = 0;  // tokens [seq->computed, seq->computed + n_tokens)
};

struct ScheduledBatch {
  std::vector<ScheduledEntry> entries;
  std::vector<Sequence*> preempted;  // this call
  int64_t n_tokens = 0;
  bool empty() const { return entries.empty(); }
};

class Scheduler {
 public:
  // key_prompt_rows: block keys also say which positions were prompt rows
  // (ModelRunner::prompt_sensitive).
  Scheduler(SchedulerOptions options, KvCacheManager* kv, bool key_prompt_rows)
      : options_(options), kv_(kv), key_prompt_rows_(key_prompt_rows) {}

  void AddWaiting(Sequence* seq);
  // A sequence that is already in the model's state up to seq->computed (a forked sample):
  // runs from the next step on. Only while has_running_slot().
  void AddRunning(Sequence* seq);
  bool has_running_slot() const {
    return static_cast<int64_t>(running_.size()) < options_.max_running;
  }
  // Running sequences plus the slots their waiting forks will take (a request with n samples
  // is admitted only when all n fit under max_running, unless nothing else runs).
  int64_t occupied_slots() const;
  // Drops a sequence from the queues and releases its pages (finish or cancel).
  void Remove(Sequence* seq);

  ScheduledBatch Schedule();

  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  int64_t n_preemptions() const { return n_preemptions_; }

 private:
  // Reserves pages so `seq` covers `positions`; false when the pool is dry.
  bool Reserve(Sequence* seq, int64_t positions);
  void ReleasePages(Sequence* seq);
  void Preempt(Sequence* seq);
  // Admits the front waiting sequence if possible (prefix hit, pages for its first chunk).
  bool Admit(Sequence* seq, int64_t budget, ScheduledBatch* batch);
  static bool Before(const Sequence* a, const Sequence* b);

  SchedulerOptions options_;
  KvCacheManager* kv_;
  bool key_prompt_rows_;
  std::vector<Sequence*> running_;  // in admission order
  std::deque<Sequence*> waiting_;   // sorted by Before
  int64_t n_preemptions_ = 0;
};

}  // namespace deepinfer::engine
