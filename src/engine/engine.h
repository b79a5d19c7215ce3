// Engine: continuous batching over a ModelRunner (docs/engine_contract.md).
//
// Step() is the loop of ARCHITECTURE.md:
//   batch  = scheduler.Schedule()      which sequences, how many tokens each, pages reserved
//   logits = runner.Forward(batch)     one call for the whole mixed batch
//   tokens = sampler.Sample(logits)    seeded per (request, sample index, position)
//   Commit(batch, tokens)              append, EOS / stop ids / length, prefix-cache registration
//   Deliver                            stop strings (the caller's check), output callbacks
// Asynchronous scheduling (EngineOptions::async_schedule): the forward call runs on a worker
// thread and the engine thread delivers the previous step's tokens meanwhile (stop-string
// checks, detokenization and the callbacks, i.e. everything a server does per token). A
// sequence a stop string ends there may already be in the running forward call: its pages are
// released, and its extra token dropped, only when that call has returned. Outputs are the same
// with the switch on or off.
// The engine is single-threaded by design: Add/Step come from one thread (the owner's loop);
// only Request::cancelled may be set from elsewhere.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "core/status.h"
#include "engine/kv_cache_manager.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/sampling/sampler.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/spec/spec_options.h"
#include "engine/spec/spec_stats.h"

namespace deepinfer {
class ThreadPool;
}

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

  // Validates and queues a request; returns its id (with params.n > 1, the n samples get the
  // ids id .. id + n - 1: the first computes the prompt, the others then fork its state and
  // share its full prompt pages). Errors (nothing queued): empty prompt, ids
  // outside the vocabulary, prompt + max_tokens beyond the context, a prompt larger than the
  // page pool, invalid sampling parameters.
  StatusOr<uint64_t> Add(Request request);
  // Runs one step. Returns an error only for engine-level failures; a failing forward call
  // finishes its requests with FinishReason::kError and the engine goes on.
  Status Step();
  // Runs steps until no request is left.
  Status RunUntilIdle();

  bool idle() const { return sequences_.empty() && pending_.empty(); }
  EngineStats stats() const;
  const KvCacheManager& kv() const { return *kv_; }
  ModelRunner& runner() const { return *runner_; }
  // Every invariant between sequences, the scheduler and the page pool.
  Status CheckIntegrity() const;

 private:
  Engine(ModelRunner* runner, EngineOptions options, int64_t n_pages, ThreadPool* pool);
  // A token to deliver: the sequence stays alive until the delivery has been made.
  struct Pending {
    std::shared_ptr<Sequence> seq;
    SampleResult sample;
    int64_t n_output = 0;
    std::optional<FinishReason> finish;
  };

  // The rows a step samples (forked samples share their lead's row of logits), with the
  // per-row suppressed ids (min_tokens) at stable addresses.
  struct SampleRows {
    std::vector<SampleRow> rows;
    std::vector<Sequence*> seqs;
    std::list<std::vector<int32_t>> suppressed;
  };

  // The stages of Step(), in order (engine.cc says what each one guarantees):
  // capacity -> prepare -> forward -> commit computed positions -> sample + append -> speculate
  // -> deliver.
  void FailUnfittable(const ScheduledBatch& batch);
  std::vector<RunnerInput> PrepareInputs(const ScheduledBatch& batch);
  void CommitComputed(const ScheduledBatch& batch, const std::vector<RunnerInput>& inputs,
                      const std::vector<float>& logits, const std::vector<int64_t>& logit_row,
                      SampleRows* rows, std::vector<size_t>* verify,
                      std::vector<std::shared_ptr<Sequence>>* alive);
  void ForkSamples(Sequence* lead, const float* row_logits, SampleRows* rows,
                   std::vector<std::shared_ptr<Sequence>>* alive);
  void AddSampleRow(Sequence* seq, const float* row_logits, SampleRows* rows);
  void SampleAndAppend(const SampleRows& rows);

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
  // Appends a sampled token; returns why the sequence ends now (EOS, stop id, length), if it does.
  std::optional<FinishReason> Append(Sequence* seq, const SampleResult& sample);
  void RegisterBlocks(Sequence* seq);
  // Rows of logits the forward call returns for `seq` consuming n_tokens more positions.
  int64_t LogitRows(const Sequence& seq, int64_t n_tokens) const;
  // Prompt logprobs from the last n_rows rows of the call that just advanced `seq` to
  // seq->computed.
  Status GatherPromptLogprobs(Sequence* seq, const float* logits, int64_t n_rows);
  void HandleCancels();
  // Runs the stop-string checks and callbacks of pending_; returns the sequences a stop string
  // ended (to retire once no forward call uses them).
  std::vector<Sequence*> DeliverPending();
  // Grammar masks of the entries that sample this step.
  void FillMasks(const ScheduledBatch& batch);
  Status RunForward(const ScheduledBatch& batch, const std::vector<RunnerInput>& inputs,
                    std::vector<float>* logits, std::vector<Sequence*>* stopped);
  // Speculative decoding after the plain rows are sampled: verifies the batch's verify entries
  // and drafts for the sequences that go on decoding (engine/spec/spec_decoder.h).
  Status SpecVerifyAndDraft(const ScheduledBatch& batch, const std::vector<float>& logits,
                            const std::vector<int64_t>& logit_row,
                            const std::vector<size_t>& verify);

  ModelRunner* runner_;
  EngineOptions options_;
  ThreadPool* pool_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<uint64_t, std::shared_ptr<Sequence>> sequences_;
  std::vector<Pending> pending_;
  std::shared_ptr<spec::SpecDecoder> spec_;  // null with speculation off
  uint64_t next_id_ = 1;
  int64_t steps_ = 0, tokens_computed_ = 0, tokens_generated_ = 0;
  double step_seconds_ = 0, forward_seconds_ = 0, spec_seconds_ = 0;
};

}  // namespace deepinfer::engine
