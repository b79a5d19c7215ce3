// `deepinfer bench-serve`: an online load generator for an OpenAI-compatible server (like
// `vllm bench serve`). Streams POST /v1/completions requests (stream_options.include_usage)
// arriving as a Poisson process at a given rate and/or capped at a fixed concurrency, and
// reports TTFT, TPOT, ITL and E2E percentiles, throughput, goodput under SLOs and cost per
// million delivered tokens (tools/bench_stats.h); a sweep over rates adds the throughput reached
// under the latency constraint and a throughput-latency plot (gnuplot, SVG).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/bench_http.h"
#include "tools/bench_stats.h"
#include "tools/server_counters.h"

namespace deepinfer::tools {

// One request of a workload: prompt ids or text, and its output length.
struct BenchPrompt {
  std::vector<int32_t> ids;  // used when non-empty
  std::string text;
  int64_t max_tokens = 0;
};

struct WorkloadOptions {
  std::string dataset = "random";  // random | shared-prefix | path of a .jsonl file
  int64_t num_prompts = 100;
  int64_t input_len = 128;   // random ids per prompt (after the shared prefix)
  int64_t output_len = 64;   // max_tokens (ignore_eos) unless a dataset line gives max_tokens
  int64_t prefix_len = 256;  // shared-prefix: tokens every prompt of a group starts with
  int64_t num_prefixes = 1;  // shared-prefix: groups, each with its own prefix
  int32_t token_min = 1000, token_max = 30000;  // random ids drawn from [min, max)
  uint64_t seed = 0;
};

// The prompts of a run. A .jsonl line: {"prompt": "text" | [ids], "max_tokens"?: n}
// ("output_len" is accepted for max_tokens); lines are reused round-robin up to num_prompts.
StatusOr<std::vector<BenchPrompt>> MakeWorkload(const WorkloadOptions& o);

// The seed of the random and shared-prefix prompts of a sweep's point `point` (0, 1, ...; -1: the
// warm-up request). Each point draws its own prompts, so none re-sends the warm-up's or an earlier
// point's to the server's prefix cache (a .jsonl dataset's prompts are the same at every point).
uint64_t WorkloadSeed(uint64_t seed, int64_t point);

struct ServeLoadOptions {
  std::optional<double> request_rate;      // requests/s (Poisson); unset = all at once
  std::optional<int64_t> max_concurrency;  // requests in flight at most
  uint64_t seed = 0;                       // arrival times
  bool progress = true;                    // a progress bar on stderr
  double timeout_s = 600;                  // per request
};

struct ClientOptions {
  HttpEndpoint endpoint;
  std::string model;  // empty: not sent
  std::string api_key;
  bool ignore_eos = true;
  double temperature = 0;  // sent with every request
};

struct ServeRunResult {
  std::optional<double> request_rate;
  std::optional<int64_t> max_concurrency;
  std::vector<RequestTiming> requests;
  std::vector<std::string> errors;  // the first few failures, for the report
  RunSummary summary;
  double load_avg_1m = -1;
  // The server's /metrics counters around the run (deepinfer servers only).
  std::optional<ServerCounters> server_before, server_after;
};

// The request body of one prompt.
nlohmann::json CompletionBody(const BenchPrompt& p, const ClientOptions& c);

// Runs the prompts against the server; never fails as a whole (failed requests are counted).
ServeRunResult RunServeLoad(const std::vector<BenchPrompt>& prompts, const ClientOptions& client,
                            const ServeLoadOptions& load, const Slo& slo,
                            std::optional<double> price_per_hour);

// JSON of one run: its settings, counts, throughputs, goodput, cost and latency distributions
// (ms).
nlohmann::ordered_json RunJson(const ServeRunResult& r);

// The throughput-latency plot of a sweep (x: output tokens/s; y: TTFT and TPOT p50/p90 in ms),
// drawn by gnuplot into an SVG file.
Status PlotSweep(const std::vector<ServeRunResult>& runs, const std::string& svg_path,
                 const std::string& title);

}  // namespace deepinfer::tools
