// Draft lengths per step (SpecPolicy, spec_options.h).
//
// The confidence head's raw logits c_j give the conditional acceptance probability sigmoid(c_j)
// of draft j given the drafts before it accepted; the released model ships no calibration
// temperatures, so AcceptanceCalibration scales it per draft position by the engine's observed
// ratio (accepted / predicted, decaying sums, prior 1:1), which drives a_j to the measured
// acceptance (on random weights: near zero, so the scheduler stops verifying drafts).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/spec/spec_options.h"
#include "engine/spec/step_cost.h"

namespace deepinfer::engine::spec {

float Sigmoid(float x);

class AcceptanceCalibration {
 public:
  explicit AcceptanceCalibration(double decay = 0.995) : decay_(decay) {}
  // Prefix survival a_1..a_n of drafts with raw confidences `c`.
  std::vector<double> Survival(std::span<const float> c) const;
  // A verify call checked `verified` drafts with confidences c and accepted the first `accepted`.
  void Observe(std::span<const float> c, int64_t verified, int64_t accepted);
  double Factor(int64_t j) const;

 private:
  double decay_;
  std::vector<double> predicted_, accepted_;
};

struct LengthCandidate {
  std::vector<double> survival;   // a_1..a_m (m = drafts available)
  std::vector<float> confidence;  // raw c_1..c_m
  int64_t max_len = 0;            // cap (output budget, positions)
};

// Lengths (<= each candidate's cap and its drafts) for one step. base_rows: rows the batch has
// without any draft (decode rows plus prefill chunk rows); base_tokens: tokens it yields.
// kCostModel: SPS(B) = 1 / (seconds(B) + overhead_s), overhead_s being the step's cost that no
// length changes (its draft calls); *theta (when given) receives Θ = τ · SPS(B) of the lengths
// chosen (tokens/s).
std::vector<int64_t> ChooseLengths(const SpecOptions& options, const StepCostModel& cost,
                                   std::span<const LengthCandidate> candidates, int64_t base_rows,
                                   double base_tokens, int64_t max_rows, double overhead_s = 0.0,
                                   double* theta = nullptr);

}  // namespace deepinfer::engine::spec
