// StepCostModel: seconds per engine step against the rows in its batch, for the DSpark
// scheduler's SPS(B) = 1 / seconds(B).
//
// seconds(B) = a + b·B, either fixed (SpecOptions cost_fixed_s / cost_per_row_s) or fitted
// online by least squares over the observed (rows, seconds) of recent steps, each observation's
// weight decaying by `decay` per later observation. While the recent rows do not spread enough
// to fit a slope (every step the same batch, as while the drafting gate is closed), b is the
// last slope they did fit, else kPriorSlope · a (a CPU decode step is read-bound: extra rows
// cost little); the fitted slope never drops below that. (Forgetting a measured slope priced
// verify rows as nearly free under load, and an exploration then reopened a losing gate.)
#pragma once

#include <cstdint>

namespace deepinfer::engine::spec {

class StepCostModel {
 public:
  static constexpr double kPriorSlope = 0.02;

  StepCostModel(double fixed_s, double per_row_s, double decay = 0.97)
      : fixed_(fixed_s > 0.0 || per_row_s > 0.0), a_(fixed_s), b_(per_row_s), decay_(decay) {}

  void Observe(int64_t rows, double seconds);
  // Predicted seconds of a step with `rows` rows (> 0; 1 when nothing was observed yet).
  double Seconds(int64_t rows) const;
  bool fixed() const { return fixed_; }
  // Fixed, or fitted from at least one observation (else Seconds is the prior's guess).
  bool observed() const { return fixed_ || sw_ > 0.0; }

 private:
  bool fixed_;
  double a_, b_, decay_;
  double sw_ = 0, sx_ = 0, sxx_ = 0, sy_ = 0, sxy_ = 0;  // decayed sufficient statistics
  double measured_slope_ = -1.0;  // the last slope the rows' spread fitted (< 0: none yet)
};

}  // namespace deepinfer::engine::spec
