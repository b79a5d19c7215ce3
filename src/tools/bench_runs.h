// `deepinfer bench --runs N`: one configuration measured N times in the same process, each run
// against its own read and peak probes (tools/bench_offline.h), and the distribution of the
// ratios over the runs. On a shared host a single run's ratio moves by several points with the
// neighbours' load; the median over runs (with its range) is the figure to compare against a
// target, and the range shows how noisy the hour was.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "tools/bench_offline.h"
#include "tools/bench_stats.h"

namespace deepinfer::tools {

struct RunsSummary {
  OfflineConfig config;
  int64_t runs = 0;
  Distribution compute_fraction;            // prefill GFLOP/s / the run's peak, every run
  Distribution best_read_gbs;               // the best probe of each run (the host's state)
  Distribution decode_step_ms;              // the runs with a decode window (count says how many)
  Distribution bandwidth_fraction_of_best;  // same runs
  Distribution decode_bound_fraction;       // same runs
  nlohmann::ordered_json ToJson() const;    // mode "runs"; each as DistributionJson
};

// The runs must share one configuration (the first run's is reported). Empty input: runs = 0.
RunsSummary SummarizeRuns(const std::vector<OfflineResult>& runs);

}  // namespace deepinfer::tools
