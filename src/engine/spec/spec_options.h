// Options of speculative decoding (docs/engine_contract.md, "Speculative decoding").
#pragma once

#include <cstdint>

namespace deepinfer::engine::spec {

enum class SpecMode { kOff, kDSpark };

// How many of a sequence's drafts the next step verifies.
enum class SpecPolicy {
  // The DSpark paper's hardware-aware scheduler (§3, Algorithm 1): prefix survival
  // a_j = prod_{i<=j} sigmoid(c_i) (online-calibrated, length_policy.h); all (sequence, j) by a_j
  // descending, admitted while Θ = τ·SPS(B) improves, stopping at the first non-improvement.
  kCostModel,
  kFixed,      // min(fixed_length, drafts)
  kThreshold,  // the drafts before the first with sigmoid(c_j) < threshold
};

struct SpecOptions {
  SpecMode mode = SpecMode::kOff;
  SpecPolicy policy = SpecPolicy::kCostModel;
  int64_t fixed_length = 0;  // kFixed; 0 = every draft
  float threshold = 0.5f;    // kThreshold
  int64_t max_drafts = 0;    // 0 = the runner's block
  // kCostModel step cost: seconds(B rows) = cost_fixed_s + cost_per_row_s · B. Both 0 =
  // profiled online from the engine's own steps (a decaying least-squares fit); set them to
  // make the policy a pure function of the drafts (no timing in the decisions).
  double cost_fixed_s = 0.0;
  double cost_per_row_s = 0.0;
  // kCostModel: drafting stays off while the fraction of the engine's recently verified drafts
  // that were accepted is below min_gain (so at the start); one decode opportunity in
  // explore_period (over all sequences) drafts and verifies anyway, which opens the gate for a
  // drafter that hits.
  double min_gain = 0.15;
  int64_t explore_period = 128;
  // kCostModel, gate closed: explorations may take at most this fraction of the engine's step
  // time. Each exploration's draft-call time, divided by the budget, must be worked off in step
  // time before the next one (a draft is a one-row call whose cost does not shrink with the
  // batch, while the step's cost per token does). 0 = no time limit (count only).
  double explore_budget = 0.01;
  // Sampled requests (temperature > 0): draft with the request's own uniforms (coupled drafts,
  // spec_decoder.h) instead of greedily. Outputs are the same either way; only acceptance moves.
  bool coupled_drafts = true;
};

}  // namespace deepinfer::engine::spec
