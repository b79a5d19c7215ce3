#include "tools/bench_runs.h"

#include <optional>

namespace deepinfer::tools {
namespace {

void AddIf(const std::optional<double>& v, std::vector<double>& out) {
  if (v) out.push_back(*v);
}

}  // namespace

RunsSummary SummarizeRuns(const std::vector<OfflineResult>& runs) {
  RunsSummary s;
  s.runs = static_cast<int64_t>(runs.size());
  if (runs.empty()) return s;
  s.config = runs.front().config;
  std::vector<double> compute, best, step, of_best, bound;
  for (const OfflineResult& r : runs) {
    compute.push_back(r.ComputeFraction());
    best.push_back(r.bandwidth_max_gbs);
    AddIf(r.decode_step_ms, step);
    AddIf(r.BandwidthFractionOfBest(), of_best);
    AddIf(r.BoundFraction(), bound);
  }
  s.compute_fraction = Summarize(compute);
  s.best_read_gbs = Summarize(best);
  s.decode_step_ms = Summarize(step);
  s.bandwidth_fraction_of_best = Summarize(of_best);
  s.decode_bound_fraction = Summarize(bound);
  return s;
}

nlohmann::ordered_json RunsSummary::ToJson() const {
  nlohmann::ordered_json j;
  j["mode"] = "runs";
  j["batch"] = config.batch;
  j["prompt_len"] = config.prompt_len;
  j["decode_len"] = config.decode_len;
  j["runs"] = runs;
  j["compute_fraction"] = DistributionJson(compute_fraction);
  j["measured_bandwidth_max_gbs"] = DistributionJson(best_read_gbs);
  j["decode_step_ms"] = DistributionJson(decode_step_ms);
  j["bandwidth_fraction_of_best"] = DistributionJson(bandwidth_fraction_of_best);
  j["decode_bound_fraction"] = DistributionJson(decode_bound_fraction);
  return j;
}

}  // namespace deepinfer::tools
