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
//   deepinfer_requests_cancelled_total              counter (client disconnects)
//   deepinfer_spec_decode_*                         drafted / verified / accepted draft tokens
//                                                   (EngineStats::spec), acceptance rate
//   deepinfer_engine_{step,forward,spec}_seconds_total  wall time in engine steps, in the model's
//                                                   forward calls, in verification + drafting
//   deepinfer_http_thread_cpu_seconds_total         CPU time of the HTTP I/O thread
//   process_cpu_seconds_total                       CPU time of the whole process
//   deepinfer_pd_*                                  KV hand-offs (prefill/decode disaggregation):
//                                                   sent, failed, bytes, seconds; received,
//                                                   pages imported, refused
//   deepinfer_rank_*{rank}                          over MPI ranks (rank_hub.h): per rank its
//                                                   running / waiting sequences, KV pages used
//                                                   and capacity, outstanding work, finished
//                                                   requests, expert exchange bytes and seconds,
//                                                   and (with {layer}) MoE rows per layer
// (step − forward − spec is the engine's scheduling work; the HTTP thread's share of the process
// CPU is what serving costs the compute threads: deepinfer bench-serve reports both.)
// Thread-safe (one mutex); observations are O(buckets).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/engine_loop.h"
#include "server/pd_handoff.h"

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

// CPU seconds of the process and of the calling thread (the server renders /metrics on its one
// HTTP I/O thread, so there `thread_s` is that thread's CPU time).
struct CpuTimes {
  double process_s = 0;
  double thread_s = 0;
};
CpuTimes ReadCpuTimes();

class Metrics {
 public:
  Metrics();
  void CountRequest(const std::string& route, int status);
  // One finished generation: seconds from arrival to the first token and to the end.
  void ObserveGeneration(double ttft_s, double e2e_s, int64_t prompt_tokens,
                         int64_t completion_tokens);
  // n engine requests cancelled because their client went away.
  void CountCancelled(int64_t n);
  std::string Render(const EngineSnapshot& engine, const CpuTimes& cpu = {}) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  Histogram ttft_, tpot_, e2e_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  int64_t cancelled_ = 0;
};

// Speculative-decoding (DSpark draft) counters as /metrics shows them.
struct SpecDecodeCounters {
  int64_t draft_calls = 0, drafted = 0, verified = 0, accepted = 0;
  std::vector<int64_t> accept_histogram;  // [k]: verify calls that accepted exactly k drafts
};

// The engine's counters (EngineStats::spec, engine/spec/spec_stats.h). The one place that
// reads them: while an engine without the `spec` member is built, this gives zeros.
template <typename Stats>
SpecDecodeCounters SpecDecodeOf(const Stats& stats) {
  SpecDecodeCounters c;
  if constexpr (requires { stats.spec.accepted; }) {
    c.draft_calls = stats.spec.draft_calls;
    c.drafted = stats.spec.drafted;
    c.verified = stats.spec.verified;
    c.accepted = stats.spec.accepted;
    c.accept_histogram.assign(stats.spec.accept_histogram.begin(),
                              stats.spec.accept_histogram.end());
  }
  return c;
}

// The counters in the Prometheus text format.
void RenderSpecDecode(const SpecDecodeCounters& counters, std::string* out);

// deepinfer_pd_*: the KV hand-offs of prefill/decode disaggregation (server/pd_handoff.h).
void RenderPdCounters(const PdCounters& c, std::string* out);

}  // namespace deepinfer::server
