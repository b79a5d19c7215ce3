// SpecDecoder: speculative decoding inside the engine's step loop (docs/engine_contract.md,
// "Speculative decoding").
//
// Per step, for every sequence that decodes and has drafts for its next token:
//   Plan      (before Schedule)  how many drafts the step verifies: Sequence::draft_rows
//   FillInput                    the verify input: the next token and its drafts, all rows'
//                                logits, speculative (the runner can roll it back)
//   Verify    (after Forward)    row by row with the sampler's own rows (penalties, logit_bias,
//                                grammar mask and min_tokens suppression apply to the target,
//                                each row seeing the tokens accepted before it): accept / resample
//                                (verify.h), append through the engine (EOS, stop ids, length
//                                end the run at their token), then EndSpeculation at the kept
//                                length
//   Draft     (after sampling)   new drafts after the newest token
// Sequences that never had drafts (opt-out, prefill, spec off) run as before.
//
// Coupled drafts (SpecOptions::coupled_drafts; sampled requests). A greedy draft of a sampled
// request is accepted with probability p(draft) (verify.h), which a small drafter's top choice
// rarely earns at temperature 1. Instead draft i is the sampler's own inverse-CDF draw from the
// drafter's logits (the request's temperature, top_k, top_p, min_p over the drafter's ids in
// ascending order) with the uniform the sampler will draw the verified token with at that
// position (seed, sample index, position; lane 0). Where the drafter's distribution equals the
// target's the two draws are the same token; close ones agree where their cumulative sums up to
// the drafted id agree (both walk the ids in ascending order to the same uniform; measured in
// docs/performance.md). The proposal is still deterministic (no q), the verify rule is the
// greedy one and the emitted token is always the sampler's draw: outputs do not change.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/spec/length_policy.h"
#include "engine/spec/spec_options.h"
#include "engine/spec/spec_stats.h"
#include "engine/spec/step_cost.h"

namespace deepinfer::engine::spec {

// Per-sequence drafting state (Sequence::spec).
struct SpecSequence {
  int64_t drafted_at = -1;  // tokens.size() when `proposal` was drafted
  DraftProposal proposal;
  bool explore = false;        // drafted on an exploration step: verify at least one
  std::vector<int32_t> input;  // the verify call's tokens
};

class SpecDecoder {
 public:
  SpecDecoder(SpecOptions options, ModelRunner* runner, const SchedulerOptions& scheduler);

  const SpecOptions& options() const { return options_; }
  // A scheduled entry that feeds more tokens than the sequence has left verifies drafts.
  static bool IsVerify(const ScheduledEntry& e) { return e.n_tokens > e.seq->remaining(); }

  void Plan(std::span<Sequence* const> running);
  void FillInput(const ScheduledEntry& e, RunnerInput* in);
  using AppendFn = std::function<std::optional<FinishReason>(const SampleResult&)>;
  // logits: [e.n_tokens][vocab]. Sets *finish when an appended token ended the output.
  Status Verify(const ScheduledEntry& e, const float* logits, const AppendFn& append,
                std::optional<FinishReason>* finish);
  // New drafts for a sequence whose every token but the newest is consumed (no-op otherwise,
  // for opted-out requests, and while the engine's acceptance is too low; see SpecOptions).
  Status Draft(Sequence* seq);
  // The step's rows and wall time: the cost model's observation when the step had no prefill
  // rows (decode_only). A prefill row needs no head, so on a model whose head dominates a mix
  // of both kinds would flatten the fitted cost of the verify rows the policy adds.
  void EndStep(int64_t rows, double seconds, bool decode_only);

  const SpecCounters& counters() const { return counters_; }

 private:
  SpecOptions options_;
  ModelRunner* runner_;
  SchedulerOptions scheduler_;
  StepCostModel cost_;
  AcceptanceCalibration calibration_;
  SpecCounters counters_;
  int64_t steps_ = 0;
  // The fraction of verified drafts accepted, over decaying sums (each verify call's weight
  // falls by kGainDecay per later call; drafts after an accepted one that ended the output are
  // not counted). It starts at 0: drafting begins closed and the first exploration (the first
  // decode opportunity) opens it when a draft is accepted; a drafter that stops hitting closes
  // it within a few verify calls. A fraction, not accepted drafts per call: the cost policy
  // verifies single drafts it rates 0.4 when rows are cheap, and a run of such misses is the
  // policy's bet, not a useless drafter (per call, four of them closed the gate for 128 steps).
  double gain() const { return gain_verified_ > 0.0 ? gain_accepted_ / gain_verified_ : 0.0; }
  double gain_accepted_ = 0.0, gain_verified_ = 0.0;
  // kCostModel with the step cost profiled online (with fixed costs the policy stays a function
  // of the drafts alone): whether speculation pays at all, not just which drafts. A decaying
  // mean (weight 0.1 on the newest) of the tokens per second of the chosen lengths, counting one
  // draft call per drafting sequence, over those of the same step with nobody drafting (the cost
  // model fits steps without their draft calls). Below 1 the gate closes (drafting costs more
  // than the verified drafts return: a compute-bound head at larger batches); explorations
  // reopen it. Starts at 1.
  double pays_ = 1.0;
  double draft_s_ = 0.0;           // decaying mean of one draft call's seconds
  double step_draft_s_ = 0.0;      // this step's draft calls so far
  int64_t explore_countdown_ = 0;  // decode opportunities until the next exploration
  double explore_debt_s_ = 0.0;    // step time still owed for past explorations (explore_budget)
};

}  // namespace deepinfer::engine::spec
