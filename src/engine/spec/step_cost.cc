#include "engine/spec/step_cost.h"

#include <algorithm>

namespace deepinfer::engine::spec {
namespace {
constexpr double kMinRowVariance = 0.25;  // rows differing by about one on average
}  // namespace

void StepCostModel::Observe(int64_t rows, double seconds) {
  if (fixed_ || rows <= 0 || !(seconds > 0.0)) return;
  const auto x = static_cast<double>(rows);
  sw_ = sw_ * decay_ + 1.0;
  sx_ = sx_ * decay_ + x;
  sxx_ = sxx_ * decay_ + x * x;
  sy_ = sy_ * decay_ + seconds;
  sxy_ = sxy_ * decay_ + x * seconds;
  const double mx = sx_ / sw_;
  const double var = sxx_ / sw_ - mx * mx;
  if (var > kMinRowVariance) measured_slope_ = std::max(0.0, (sxy_ / sw_ - mx * sy_ / sw_) / var);
}

double StepCostModel::Seconds(int64_t rows) const {
  const auto x = static_cast<double>(std::max<int64_t>(rows, 1));
  if (fixed_) return std::max(1e-12, a_ + b_ * x);
  if (sw_ <= 0.0) return 1.0 + kPriorSlope * x;
  const double mx = sx_ / sw_, my = sy_ / sw_;
  double b = 0.0, a = my;
  // The slope of the recent rows (Observe fits it whenever they spread by about one on
  // average), else the last one they did fit, else the prior slope.
  if (measured_slope_ >= 0.0) {
    b = measured_slope_;
    a = my - b * mx;
  } else {
    a = my / (1.0 + kPriorSlope * mx);
    b = kPriorSlope * a;
  }
  if (a <= 0.0) {  // a fit through the origin or below: keep a positive intercept
    a = 1e-3 * my;
  }
  // Noise can flatten the fit; every row costs at least the prior slope (its logits alone).
  b = std::max(b, kPriorSlope * a);
  return a + b * x;
}

}  // namespace deepinfer::engine::spec
