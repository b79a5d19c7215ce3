// What a deepinfer server spent a bench-serve run on, from its /metrics counters read before and
// after the run: wall time in engine steps, in the model's forward calls and in speculative
// decoding, CPU time of the HTTP I/O thread and of the whole process (server/metrics.h). Other
// OpenAI-compatible servers lack these series; the report then has no server section.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/bench_http.h"

namespace deepinfer::tools {

struct ServerCounters {
  double step_s = 0;
  double forward_s = 0;
  double spec_s = 0;
  double http_cpu_s = 0;
  double process_cpu_s = 0;
};

// The counters in a Prometheus text exposition; nullopt unless all five are present.
std::optional<ServerCounters> ParseServerCounters(const std::string& metrics_text);

// GET /metrics and parse; nullopt on any failure (not a deepinfer server, no /metrics).
std::optional<ServerCounters> ScrapeServerCounters(const HttpEndpoint& ep,
                                                   const std::string& api_key);

// The run's share of each (after − before) over `duration_s` of client wall time:
//   scheduling_fraction = (step − forward − spec) / step: the engine's own work per step;
//   http_cpu_fraction   = HTTP thread CPU / process CPU: what serving took from the cores;
//   overhead_fraction   = the sum of the two, the serving overhead relative to step time;
//   forward_busy_fraction = forward / duration: how much of the run the model computed.
nlohmann::ordered_json ServerOverheadJson(const ServerCounters& before, const ServerCounters& after,
                                          double duration_s);

}  // namespace deepinfer::tools
