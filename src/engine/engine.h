// Engine: continuous batching over a ModelRunner (docs/engine_contract.md).
//
// Step() is the loop of ARCHITECTURE.md, as stages (listed with the private members below):
//   batch  = scheduler.Schedule()      which sequences, how many tokens each, pages reserved
//   inputs = prepare(batch)            runner sequences for admissions, one input per entry
//   logits = runner.Forward(inputs)    one call for the whole mixed batch
//   commit computed positions          prefix-cache registration, prompt logprobs
//   tokens = sampler.Sample(logits)    seeded per (request, sample index, position); appended
//                                      with the end-of-output rules (EOS, stop ids, length)
//   speculate                          verify drafts, draft again (engine/spec/)
//   deliver                            stop strings (the caller's check), output callbacks
// Asynchronous scheduling (EngineOptions::async_schedule): the forward call runs on a persistent
// worker thread (core/task_thread.h) and the engine thread delivers the previous step's tokens
// meanwhile (stop-string checks, detokenization and the callbacks, i.e. everything a server does
// per token). A sequence a stop string ends there may already be in the running forward call: its
// pages are released, and its extra token dropped, only when that call has returned. Outputs are
// the same with the switch on or off. The engine is single-threaded by design: Add/Step come from
// one thread (the owner's loop); only Request::cancelled may be set from elsewhere.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/delivery.h"
#include "engine/kv_cache_manager.h"
#include "engine/model_runner.h"
#include "engine/page_handoff.h"
#include "engine/request.h"
#include "engine/sampling/sampler.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/spec/spec_options.h"
#include "engine/spec/spec_stats.h"
#include "engine/step_prepare.h"

namespace deepinfer {
class TaskThread;
class ThreadPool;
}  // namespace deepinfer

namespace deepinfer::engine {

namespace spec {
class SpecDecoder;
}

struct EngineOptions {
  int64_t kv_budget_bytes = int64_t{2} << 30;  // pages + per-sequence state of max_running
  SchedulerOptions scheduler;
  bool prefix_cache = true;
  bool async_schedule = true;
  bool check_integrity = false;  // KvCacheManager::CheckIntegrity after every step
  spec::SpecOptions spec;        // speculative decoding (engine/spec/; off by default)
};

struct EngineStats {
  KvCacheCounters kv;
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t tokens_computed = 0;  // positions fed to the model
  int64_t tokens_generated = 0;
  int64_t tails_continued = 0;  // requests that continued a handed-over tail (page_handoff.h)
  // Wall time inside Step() calls that ran a batch; inside their target-model forward calls;
  // inside speculative verification + DSpark draft calls. step - forward - spec is the engine's
  // own work (scheduling, sampling, the deliveries not hidden behind the forward call).
  double step_seconds = 0;
  double forward_seconds = 0;
  double spec_seconds = 0;
  spec::SpecCounters spec;  // drafted / accepted counters and the acceptance-length histogram
};

// The engine's own share of its step time, (step - forward - spec) / step, from the seconds of
// EngineStats (or their differences over a run); 0 when no step ran. Used by `deepinfer bench`,
// bench-serve's server section (from /metrics) and engine_bench.
inline double SchedulingFraction(double step_s, double forward_s, double spec_s) {
  return step_s > 0 ? (step_s - forward_s - spec_s) / step_s : 0.0;
}

class Engine {
 public:
  // Sizes the page pool from options.kv_budget_bytes and initializes the runner's pages.
  static StatusOr<std::unique_ptr<Engine>> Create(ModelRunner* runner, EngineOptions options,
                                                  ThreadPool* pool = nullptr);
  ~Engine();

  // Validates and queues a request; returns its id (with params.n > 1, the n samples get the
  // ids id .. id + n - 1: the first computes the prompt, the others then fork its state and
  // share its full prompt pages). Errors (nothing queued): empty prompt, ids
  // outside the vocabulary, prompt + max_tokens beyond the context, a prompt larger than the
  // page pool, invalid sampling parameters.
  StatusOr<uint64_t> Add(Request request);
  // Add's checks of a prompt's tokens: not empty, every id in the vocabulary.
  Status CheckPromptTokens(std::span<const int32_t> prompt) const;
  // Runs one step. Returns an error only for engine-level failures; a failing forward call
  // finishes its requests with FinishReason::kError and the engine goes on.
  Status Step();
  // Runs steps until no request is left.
  Status RunUntilIdle();

  bool idle() const { return sequences_.empty() && deliveries_.empty(); }
  EngineStats stats() const;
  const KvCacheManager& kv() const { return *kv_; }
  ModelRunner& runner() const { return *runner_; }
  // Every invariant between sequences, the scheduler and the page pool.
  Status CheckIntegrity() const;

  // KV hand-off (page_handoff.h, where they are defined). ExportPromptPages copies the cached
  // complete pages of `prompt`'s blocks, from the first block up to the first one not cached.
  // ImportPages checks the bundle (fingerprint equal to `fingerprint`, this engine's page
  // layout, every checksum) and registers its pages in the prefix cache as cached pages (ref 0,
  // evictable); blocks already cached are skipped, and when no page can be had the rest is
  // dropped (a shorter prefix hit, never a wrong one). A bundle's sequence tail (checked with
  // the pages) is held, when all its pages landed, for the request whose prompt continues it.
  // `tail`: a prefill leg's (RequestOutput::tail), sent with the pages when it continues them.
  StatusOr<PageBundle> ExportPromptPages(std::span<const int32_t> prompt,
                                         const std::string& fingerprint,
                                         std::shared_ptr<const SequenceTail> tail = nullptr) const;
  StatusOr<ImportResult> ImportPages(const PageBundle& bundle, const std::string& fingerprint);
  // Tails held for requests still to come (page_handoff.h).
  int64_t held_tails() const { return static_cast<int64_t>(tails_.size()); }

 private:
  Engine(ModelRunner* runner, EngineOptions options, int64_t n_pages, ThreadPool* pool);
  // The rows a step samples (forked samples share their lead's row of logits), with the
  // per-row suppressed ids (min_tokens) at stable addresses.
  struct SampleRows {
    std::vector<SampleRow> rows;
    std::vector<Sequence*> seqs;
    std::list<std::vector<int32_t>> suppressed;
  };

  // The stages of Step(), in order (docs/engine_contract.md, "The step"; each one's guarantee
  // is stated where it is defined):
  //   capacity   Scheduler::Schedule, then FailUnfittable
  //   prepare    StartAdmitted (step_prepare.h: admission's model work), BuildStepInputs
  //   forward    RunForward (overlapping the previous step's deliveries when async)
  //   commit     CommitComputed: computed positions, prefix-cache blocks, prompt logprobs,
  //              the rows to sample (forked samples join their lead's row)
  //   sample     SampleAndAppend (token_append.h: the end-of-output rules)
  //   speculate  SpecVerifyAndDraft
  //   deliver    DeliveryQueue::Deliver (delivery.h)
  void FailUnfittable(const ScheduledBatch& batch);
  void StartAdmitted(ScheduledBatch* batch);
  bool RunForward(const ScheduledBatch& batch, const StepInputs& in, std::vector<float>* logits);
  void CommitComputed(const ScheduledBatch& batch, const StepInputs& in,
                      const std::vector<float>& logits, SampleRows* rows,
                      std::vector<size_t>* verify, std::vector<std::shared_ptr<Sequence>>* alive);
  void ForkSamples(Sequence* lead, const float* row_logits, SampleRows* rows,
                   std::vector<std::shared_ptr<Sequence>>* alive);
  void AddSampleRow(Sequence* seq, const float* row_logits, SampleRows* rows);
  void SampleAndAppend(const SampleRows& rows);
  Status SpecVerifyAndDraft(const ScheduledBatch& batch, const StepInputs& in,
                            const std::vector<float>& logits, const std::vector<size_t>& verify);
  // Delivers what is queued and retires the sequences a stop string ended.
  void DeliverAndRetire();

  Sequence* NewSequence(Request request, uint64_t seed);
  // Starts `seq` (a waiting sample of the same request) from the state of `lead`, whose prompt
  // has just been computed: shared full pages, a copy of the partial one, a forked runner
  // sequence. False (nothing taken) when there is no running slot, page or runner support.
  bool Fork(Sequence* lead, Sequence* seq);
  // Hands the samples still waiting on `lead` to the scheduler (they compute the prompt).
  void ReleaseForks(Sequence* lead);
  // Ends a sequence now (no forward call in flight): releases its pages and tells the caller.
  void Finish(Sequence* seq, FinishReason reason, Status error = Status::Ok());
  // Drops a finished sequence from the scheduler and the live set (its pages released).
  void Retire(Sequence* seq);
  // Appends a sampled token (token_append.h) and queues it for delivery; returns why the
  // sequence ends now, if it does.
  std::optional<FinishReason> Append(Sequence* seq, const SampleResult& sample);
  void RegisterBlocks(Sequence* seq);
  // KV hand-off (page_handoff.cc): a prefill leg's tail as it ends (null when the runner cannot
  // save it); the held tail `request`'s prompt continues, taken off the list (null if none).
  std::shared_ptr<const SequenceTail> CaptureTail(const Sequence& seq) const;
  std::shared_ptr<const SequenceTail> TakeTail(const Request& request);
  void HandleCancels();
  // Grammar masks of the entries that sample this step.
  void FillMasks(const ScheduledBatch& batch);

  ModelRunner* runner_;
  EngineOptions options_;
  ThreadPool* pool_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<uint64_t, std::shared_ptr<Sequence>> sequences_;
  DeliveryQueue deliveries_;
  std::shared_ptr<spec::SpecDecoder> spec_;     // null with speculation off
  std::unique_ptr<TaskThread> forward_thread_;  // async: runs the forward calls
  std::vector<float> step_logits_;  // a step's logits; the buffer is reused by the next step
  std::deque<std::shared_ptr<const SequenceTail>> tails_;  // imported, newest last
  uint64_t next_id_ = 1;
  int64_t steps_ = 0, tokens_computed_ = 0, tokens_generated_ = 0, tails_continued_ = 0;
  double step_seconds_ = 0, forward_seconds_ = 0, spec_seconds_ = 0;
};

}  // namespace deepinfer::engine
