#include "engine/spec/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace deepinfer::engine::spec {

Status TargetDistribution(const float* logits, int64_t vocab, const SamplingParams& params,
                          const TokenHistory& history, const uint32_t* allowed_bits,
                          std::span<const int32_t> suppressed, std::vector<double>* p) {
  std::vector<float> x(logits, logits + vocab);
  auto in_vocab = [&](int64_t id) { return id >= 0 && id < vocab; };
  for (int64_t v = 0; v < vocab; ++v) {
    if (allowed_bits != nullptr && !((allowed_bits[v / 32] >> (v % 32)) & 1u)) {
      x[static_cast<size_t>(v)] = -std::numeric_limits<float>::infinity();
    }
  }
  for (const auto& [id, bias] : params.logit_bias) {
    if (!in_vocab(id)) return InvalidArgument("logit_bias id out of range");
    x[static_cast<size_t>(id)] += bias;
  }
  if (params.repetition_penalty != 1.0f) {
    const float r = params.repetition_penalty;
    for (const auto& [id, count] : history.seen_counts()) {
      if (!in_vocab(id)) return InvalidArgument("history id out of range");
      float& v = x[static_cast<size_t>(id)];
      v = v > 0.0f ? v / r : v * r;
    }
  }
  if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
    for (const auto& [id, count] : history.generated_counts()) {
      if (!in_vocab(id)) return InvalidArgument("history id out of range");
      float& v = x[static_cast<size_t>(id)];
      v -= params.frequency_penalty * static_cast<float>(count);
      v -= params.presence_penalty;
    }
  }
  for (int32_t id : suppressed) {
    if (!in_vocab(id)) return InvalidArgument("suppressed id out of range");
    x[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
  }
  const auto max_it = std::max_element(x.begin(), x.end());
  if (!std::isfinite(*max_it)) {
    return InvalidArgument("no token can be sampled: every token is masked or suppressed");
  }
  p->assign(static_cast<size_t>(vocab), 0.0);
  if (params.greedy()) {
    (*p)[static_cast<size_t>(max_it - x.begin())] = 1.0;
    return Status::Ok();
  }
  const double mx = *max_it, inv_t = 1.0 / params.temperature;
  std::vector<double> e(static_cast<size_t>(vocab));
  for (size_t v = 0; v < e.size(); ++v) {
    e[v] = x[v] == -std::numeric_limits<float>::infinity() ? 0.0 : std::exp((x[v] - mx) * inv_t);
  }
  std::vector<double> sorted(e);
  std::sort(sorted.begin(), sorted.end(), std::greater<double>());
  double keep = 0.0;
  double total = 0.0;
  for (double v : sorted) total += v;
  if (params.top_k > 0 && params.top_k < vocab) {
    keep = sorted[static_cast<size_t>(params.top_k - 1)];
    total = 0.0;
    for (double v : sorted) {
      if (v >= keep) total += v;
    }
  }
  if (params.top_p < 1.0f) {
    // The largest v whose upper set {e >= v} (ties included) holds top_p of the mass.
    double cum = 0.0;
    for (size_t i = 0; i < sorted.size();) {
      size_t k = i;
      while (k < sorted.size() && sorted[k] == sorted[i]) cum += sorted[k++];
      if (cum >= params.top_p * total) {
        keep = std::max(keep, sorted[i]);
        break;
      }
      i = k;
    }
  }
  if (params.min_p > 0.0f) keep = std::max(keep, static_cast<double>(params.min_p));
  double z = 0.0;
  for (size_t v = 0; v < e.size(); ++v) {
    if (e[v] > 0.0 && e[v] >= keep) {
      (*p)[v] = e[v];
      z += e[v];
    }
  }
  for (double& v : *p) v /= z;
  return Status::Ok();
}

DraftVerdict VerifyDraft(std::span<const double> p, std::span<const float> q, int32_t draft,
                         double u_accept, double u_resample) {
  const auto d = static_cast<size_t>(draft);
  const double qd = q[d], pd = p[d];
  // Accept with probability min(1, p/q): u < p/q, written without the division.
  if (qd > 0.0 && u_accept * qd < pd) return {true, draft};
  double mass = 0.0;
  for (size_t v = 0; v < p.size(); ++v) mass += std::max(0.0, p[v] - static_cast<double>(q[v]));
  const bool residual = mass > 0.0;  // else p <= q everywhere (p == q up to rounding): use p
  if (!residual) mass = 1.0;
  const double target = u_resample * mass;
  double cum = 0.0;
  int32_t last = -1;
  for (size_t v = 0; v < p.size(); ++v) {
    const double w = residual ? std::max(0.0, p[v] - static_cast<double>(q[v])) : p[v];
    if (w <= 0.0) continue;
    last = static_cast<int32_t>(v);
    cum += w;
    if (cum > target) return {false, last};
  }
  return {false, last};  // rounding at the top of the sum
}

}  // namespace deepinfer::engine::spec
