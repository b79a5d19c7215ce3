// The statistics the benchmark commands report (`deepinfer bench`, `deepinfer bench-serve`):
// percentiles, per-request latency summaries, goodput under SLOs, cost per million tokens and the
// throughput a sweep reaches under a latency constraint, and a distribution's JSON form. Plain
// functions of plain data, so the arithmetic is unit-tested against hand-computed values
// (tests/tools/bench_stats_test.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace deepinfer::tools {

// The q-th percentile (q in [0, 100]) with linear interpolation between the closest ranks (the
// numpy default): rank = q/100 * (n-1). 0 for an empty sample.
double Percentile(std::vector<double> values, double q);

struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  int64_t count = 0;
};
Distribution Summarize(const std::vector<double>& values);
// {mean, p50, p90, p99, min, max} each times `scale` (1e3: seconds as ms), and count.
nlohmann::ordered_json DistributionJson(const Distribution& d, double scale = 1.0);

// What one streamed request measured, in seconds from its send.
struct RequestTiming {
  bool ok = false;
  double ttft_s = 0;          // first content chunk
  double e2e_s = 0;           // last byte of the response
  std::vector<double> itl_s;  // gaps between consecutive content chunks
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens (0 when absent)
};

// Time per output token after the first: (e2e - ttft) / (output_tokens - 1); nullopt for fewer
// than two tokens.
std::optional<double> Tpot(const RequestTiming& r);

struct Slo {
  std::optional<double> ttft_s;  // unset: no constraint
  std::optional<double> tpot_s;
};

// A successful request meets the SLO when every set bound holds (a request with one output
// token has no TPOT and meets any TPOT bound).
bool MeetsSlo(const RequestTiming& r, const Slo& slo);

struct RunSummary {
  double duration_s = 0;
  int64_t completed = 0, failed = 0;
  int64_t input_tokens = 0, output_tokens = 0;  // over completed requests
  int64_t cached_input_tokens = 0;    // of input_tokens, what the server's prefix cache served
  double request_throughput = 0;      // completed / duration
  double output_throughput = 0;       // output tokens / duration
  double total_token_throughput = 0;  // (input + output) / duration
  int64_t good_requests = 0;          // completed and within the SLO
  double request_goodput = 0;         // good requests / duration
  double output_goodput = 0;          // output tokens of good requests / duration
  Distribution ttft_s, tpot_s, itl_s, e2e_s;
  // price_per_hour * duration / 3600 per million output tokens (delivered), and per million
  // output tokens of good requests; nullopt without a price or tokens.
  std::optional<double> cost_per_million_tokens;
  std::optional<double> cost_per_million_good_tokens;
};

RunSummary Summarize(const std::vector<RequestTiming>& requests, double duration_s, const Slo& slo,
                     std::optional<double> price_per_hour);

// Over the points of a sweep, the highest output throughput among the runs whose p90 TTFT and
// p90 TPOT meet the SLO's set bounds (index of that run), or nullopt when none does.
std::optional<size_t> BestUnderSlo(const std::vector<RunSummary>& runs, const Slo& slo);

}  // namespace deepinfer::tools
