#include "engine/spec/length_policy.h"

#include <algorithm>
#include <cmath>

namespace deepinfer::engine::spec {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

double AcceptanceCalibration::Factor(int64_t j) const {
  const auto i = static_cast<size_t>(j);
  const double pred = i < predicted_.size() ? predicted_[i] : 0.0;
  const double acc = i < accepted_.size() ? accepted_[i] : 0.0;
  return (acc + 1.0) / (pred + 1.0);
}

std::vector<double> AcceptanceCalibration::Survival(std::span<const float> c) const {
  std::vector<double> a(c.size());
  double s = 1.0;
  for (size_t j = 0; j < c.size(); ++j) {
    s *= std::min(1.0, Factor(static_cast<int64_t>(j)) * Sigmoid(c[j]));
    a[j] = s;
  }
  return a;
}

void AcceptanceCalibration::Observe(std::span<const float> c, int64_t verified, int64_t accepted) {
  const auto tried = static_cast<size_t>(std::min(verified, accepted + 1));
  if (predicted_.size() < tried) {
    predicted_.resize(tried, 0.0);
    accepted_.resize(tried, 0.0);
  }
  for (size_t j = 0; j < tried && j < c.size(); ++j) {
    predicted_[j] = predicted_[j] * decay_ + Sigmoid(c[j]);
    accepted_[j] = accepted_[j] * decay_ + (static_cast<int64_t>(j) < accepted ? 1.0 : 0.0);
  }
}

std::vector<int64_t> ChooseLengths(const SpecOptions& options, const StepCostModel& cost,
                                   std::span<const LengthCandidate> candidates, int64_t base_rows,
                                   double base_tokens, int64_t max_rows, double overhead_s,
                                   double* theta_out) {
  std::vector<int64_t> len(candidates.size(), 0);
  for (size_t r = 0; r < candidates.size(); ++r) {
    const LengthCandidate& c = candidates[r];
    const auto avail = std::min<int64_t>(c.max_len, static_cast<int64_t>(c.confidence.size()));
    if (options.policy == SpecPolicy::kFixed) {
      len[r] = options.fixed_length > 0 ? std::min(avail, options.fixed_length) : avail;
    } else if (options.policy == SpecPolicy::kThreshold) {
      int64_t n = 0;
      while (n < avail && Sigmoid(c.confidence[static_cast<size_t>(n)]) >= options.threshold) ++n;
      len[r] = n;
    }
  }
  if (options.policy != SpecPolicy::kCostModel) {
    int64_t rows = base_rows;  // the batch token budget still bounds the verify rows
    for (int64_t& l : len) {
      l = std::clamp<int64_t>(max_rows - rows, 0, l);
      rows += l;
    }
    return len;
  }
  // Algorithm 1: (candidate, j) by a_j descending (ties: candidate order, then j), admitted
  // while Θ = τ · SPS(B) improves; a_j never exceeds a_{j-1}, so admitting in this order
  // always extends a candidate's prefix.
  struct Item {
    double a;
    size_t r;
    int64_t j;
  };
  std::vector<Item> items;
  for (size_t r = 0; r < candidates.size(); ++r) {
    const LengthCandidate& c = candidates[r];
    const auto avail = std::min<int64_t>(c.max_len, static_cast<int64_t>(c.survival.size()));
    for (int64_t j = 0; j < avail; ++j) items.push_back({c.survival[static_cast<size_t>(j)], r, j});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& x, const Item& y) { return x.a > y.a; });
  double tau = base_tokens;
  int64_t rows = base_rows;
  double theta = tau / (cost.Seconds(rows) + overhead_s);
  for (const Item& it : items) {
    if (it.j != len[it.r]) continue;  // a tie out of prefix order: wait for the prefix
    if (rows + 1 > max_rows) break;
    const double next = (tau + it.a) / (cost.Seconds(rows + 1) + overhead_s);
    if (!(next > theta)) break;  // the first non-improvement ends the admission
    theta = next;
    tau += it.a;
    rows += 1;
    len[it.r] = it.j + 1;
  }
  if (theta_out != nullptr) *theta_out = theta;
  return len;
}

}  // namespace deepinfer::engine::spec
