// Server metrics in the Prometheus text format (GET /metrics).
//
//   deepinfer_requests_total{route,status}          counter
//   deepinfer_prompt_tokens_total, deepinfer_generation_tokens_total
//   deepinfer_time_to_first_token_seconds           histogram (arrival → first token sent)
//   deepinfer_time_per_output_token_seconds         histogram ((e2e − ttft) / (tokens − 1))
//   deepinfer_e2e_request_latency_seconds           histogram
//   deepinfer_requests_running / _waiting / _pending gauges (engine snapshot)
//   deepinfer_kv_pages_{used,cached,free,capacity}  gauges
//   deepinfer_prefix_cache_{queries,hits}_total, deepinfer_prefix_cache_hit_rate
// Thread-safe (one mutex); observations are O(buckets).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/engine_loop.h"

namespace deepinfer::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  void Render(const std::string& name, const std::string& help, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; last = +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void CountRequest(const std::string& route, int status);
  // One finished generation: seconds from arrival to the first token and to the end.
  void ObserveGeneration(double ttft_s, double e2e_s, int64_t prompt_tokens,
                         int64_t completion_tokens);
  std::string Render(const EngineSnapshot& engine) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  Histogram ttft_, tpot_, e2e_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
};

}  // namespace deepinfer::server
