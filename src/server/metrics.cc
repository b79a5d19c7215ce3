#include "server/metrics.h"

#include <sys/resource.h>

#include <cstdio>
#include <ctime>

namespace deepinfer::server {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void Gauge(const char* name, const char* help, double v, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name +
          " " + Num(v) + "\n";
}

void Counter(const char* name, const char* help, double v, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
          " " + Num(v) + "\n";
}

// One labelled family with a value per rank: name{rank="r"} v.
template <typename Value>
void PerRank(const char* name, const char* type, const char* help,
             const std::vector<RankHub::RankView>& ranks, Value value, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    *out += std::string(name) + "{rank=\"" + std::to_string(r) + "\"} " +
            Num(static_cast<double>(value(ranks[r]))) + "\n";
  }
}

// The per-rank families of a server over MPI ranks.
void RenderRanks(const std::vector<RankHub::RankView>& ranks, std::string* out) {
  using View = RankHub::RankView;
  PerRank(
      "deepinfer_rank_requests_running", "gauge", "sequences running on each rank", ranks,
      [](const View& v) { return v.snapshot.running; }, out);
  PerRank(
      "deepinfer_rank_requests_waiting", "gauge", "sequences waiting on each rank", ranks,
      [](const View& v) { return v.snapshot.waiting; }, out);
  PerRank(
      "deepinfer_rank_kv_pages_used", "gauge", "KV pages held by sequences on each rank", ranks,
      [](const View& v) { return v.snapshot.kv_pages_used; }, out);
  PerRank(
      "deepinfer_rank_kv_pages_capacity", "gauge", "KV pages in each rank's pool", ranks,
      [](const View& v) { return v.snapshot.kv_pages_capacity; }, out);
  PerRank(
      "deepinfer_rank_prefix_cache_queries_total", "counter",
      "prompt blocks looked up in each rank's prefix cache", ranks,
      [](const View& v) { return v.snapshot.prefix_queries; }, out);
  PerRank(
      "deepinfer_rank_prefix_cache_hits_total", "counter",
      "prompt blocks found in each rank's prefix cache", ranks,
      [](const View& v) { return v.snapshot.prefix_hits; }, out);
  PerRank(
      "deepinfer_rank_pd_tails_continued_total", "counter",
      "requests that continued a handed-over sequence tail on each rank", ranks,
      [](const View& v) { return v.snapshot.tails_continued; }, out);
  PerRank(
      "deepinfer_rank_work_tokens", "gauge",
      "outstanding tokens of work placed on each rank (prompt + most output left)", ranks,
      [](const View& v) { return v.work; }, out);
  PerRank(
      "deepinfer_rank_requests_finished_total", "counter",
      "requests of this server finished on each rank", ranks,
      [](const View& v) { return v.requests_finished; }, out);
  PerRank(
      "deepinfer_rank_expert_exchange_bytes_total", "counter",
      "expert exchange bytes sent and received by each rank", ranks,
      [](const View& v) { return v.snapshot.exchange_bytes; }, out);
  PerRank(
      "deepinfer_rank_expert_exchange_seconds_total", "counter",
      "seconds each rank spent in the expert exchange's MPI calls", ranks,
      [](const View& v) { return v.snapshot.exchange_seconds; }, out);
  const char* rows = "deepinfer_rank_moe_rows_total";
  *out += std::string("# HELP ") + rows +
          " (row, expert) pairs each rank's experts ran, per MoE layer\n# TYPE " + rows +
          " counter\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::vector<int64_t>& by_layer = ranks[r].snapshot.rows_by_layer;
    for (size_t l = 0; l < by_layer.size(); ++l) {
      *out += std::string(rows) + "{rank=\"" + std::to_string(r) + "\",layer=\"" +
              std::to_string(l) + "\"} " + std::to_string(by_layer[l]) + "\n";
    }
  }
}

double Seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

}  // namespace

CpuTimes ReadCpuTimes() {
  CpuTimes c;
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) c.process_s = Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
    c.thread_s = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return c;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  size_t b = 0;
  while (b < bounds_.size() && v > bounds_[b]) ++b;
  ++counts_[b];
  sum_ += v;
  ++count_;
}

void Histogram::Render(const std::string& name, const std::string& help, std::string* out) const {
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cumulative = 0;
  for (size_t b = 0; b < bounds_.size(); ++b) {
    cumulative += counts_[b];
    *out += name + "_bucket{le=\"" + Num(bounds_[b]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += counts_.back();
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  *out += name + "_sum " + Num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      e2e_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}) {}

void Metrics::CountRequest(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{route, status}];
}

void Metrics::ObserveGeneration(double ttft_s, double e2e_s, int64_t prompt_tokens,
                                int64_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += completion_tokens;
  e2e_.Observe(e2e_s);
  if (completion_tokens > 0) ttft_.Observe(ttft_s);
  if (completion_tokens > 1) tpot_.Observe((e2e_s - ttft_s) / (completion_tokens - 1));
}

std::string Metrics::Render(const EngineSnapshot& engine, const CpuTimes& cpu) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP deepinfer_requests_total HTTP requests by route and status\n";
  out += "# TYPE deepinfer_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += "deepinfer_requests_total{route=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  Counter("deepinfer_prompt_tokens_total", "prompt tokens of finished generations",
          static_cast<double>(prompt_tokens_), &out);
  Counter("deepinfer_generation_tokens_total", "generated tokens of finished generations",
          static_cast<double>(generation_tokens_), &out);
  ttft_.Render("deepinfer_time_to_first_token_seconds", "arrival to the first generated token",
               &out);
  tpot_.Render("deepinfer_time_per_output_token_seconds", "mean time per token after the first",
               &out);
  e2e_.Render("deepinfer_e2e_request_latency_seconds", "arrival to the last token", &out);
  const engine::EngineStats& s = engine.stats;
  Gauge("deepinfer_requests_running", "sequences running in the engine",
        static_cast<double>(s.running), &out);
  Gauge("deepinfer_requests_waiting", "sequences waiting in the engine",
        static_cast<double>(s.waiting), &out);
  Gauge("deepinfer_requests_pending", "engine requests in the server (inbox, waiting, running)",
        static_cast<double>(engine.pending), &out);
  Gauge("deepinfer_kv_pages_capacity", "KV pages in the pool", static_cast<double>(s.kv.capacity),
        &out);
  Gauge("deepinfer_kv_pages_used", "KV pages held by sequences", static_cast<double>(s.kv.used),
        &out);
  Gauge("deepinfer_kv_pages_cached", "KV pages kept for prefix reuse",
        static_cast<double>(s.kv.cached), &out);
  Gauge("deepinfer_kv_pages_free", "KV pages free", static_cast<double>(s.kv.free), &out);
  Counter("deepinfer_prefix_cache_queries_total", "prompt blocks looked up in the prefix cache",
          static_cast<double>(s.kv.prefix_queries), &out);
  Counter("deepinfer_prefix_cache_hits_total", "prompt blocks found in the prefix cache",
          static_cast<double>(s.kv.prefix_hits), &out);
  Gauge("deepinfer_prefix_cache_hit_rate", "prefix cache hits / queries",
        s.kv.prefix_queries > 0
            ? static_cast<double>(s.kv.prefix_hits) / static_cast<double>(s.kv.prefix_queries)
            : 0.0,
        &out);
  Counter("deepinfer_engine_steps_total", "engine steps", static_cast<double>(s.steps), &out);
  Counter("deepinfer_engine_preemptions_total", "sequences preempted by recompute",
          static_cast<double>(s.preemptions), &out);
  Counter("deepinfer_pd_tails_continued_total",
          "requests that continued a handed-over sequence tail (decode side, this rank)",
          static_cast<double>(s.tails_continued), &out);
  Counter("deepinfer_requests_cancelled_total",
          "engine requests cancelled because their client disconnected",
          static_cast<double>(cancelled_), &out);
  Counter("deepinfer_engine_step_seconds_total", "wall time in engine steps that ran a batch",
          s.step_seconds, &out);
  Counter("deepinfer_engine_forward_seconds_total", "wall time in the target model's forward calls",
          s.forward_seconds, &out);
  Counter("deepinfer_engine_spec_seconds_total",
          "wall time in speculative verification and DSpark draft calls", s.spec_seconds, &out);
  Counter("deepinfer_http_thread_cpu_seconds_total",
          "CPU time of the thread running the HTTP I/O loop (it also loaded the model at startup)",
          cpu.thread_s, &out);
  Counter("process_cpu_seconds_total", "CPU time of the server process (user + system)",
          cpu.process_s, &out);
  RenderSpecDecode(SpecDecodeOf(s), &out);
  if (!engine.ranks.empty()) RenderRanks(engine.ranks, &out);
  return out;
}

void Metrics::CountCancelled(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ += n;
}

void RenderSpecDecode(const SpecDecodeCounters& c, std::string* out) {
  Counter("deepinfer_spec_decode_draft_calls_total", "speculative decoding: draft calls",
          static_cast<double>(c.draft_calls), out);
  Counter("deepinfer_spec_decode_draft_tokens_total", "speculative decoding: tokens drafted",
          static_cast<double>(c.drafted), out);
  Counter("deepinfer_spec_decode_verified_tokens_total",
          "speculative decoding: drafted tokens checked by the target model",
          static_cast<double>(c.verified), out);
  Counter("deepinfer_spec_decode_accepted_tokens_total",
          "speculative decoding: drafted tokens accepted", static_cast<double>(c.accepted), out);
  Gauge("deepinfer_spec_decode_acceptance_rate", "accepted / verified draft tokens",
        c.verified > 0 ? static_cast<double>(c.accepted) / static_cast<double>(c.verified) : 0.0,
        out);
  *out += "# HELP deepinfer_spec_decode_verify_calls_total verify calls by drafts accepted\n";
  *out += "# TYPE deepinfer_spec_decode_verify_calls_total counter\n";
  for (size_t k = 0; k < c.accept_histogram.size(); ++k) {
    *out += "deepinfer_spec_decode_verify_calls_total{accepted=\"" + std::to_string(k) + "\"} " +
            std::to_string(c.accept_histogram[k]) + "\n";
  }
}

void RenderPdCounters(const PdCounters& c, std::string* out) {
  Counter("deepinfer_pd_handoffs_total", "KV hand-offs sent and acknowledged (prefill side)",
          static_cast<double>(c.handoffs), out);
  Counter("deepinfer_pd_handoff_failures_total", "KV hand-offs that failed (prefill side)",
          static_cast<double>(c.failures), out);
  Counter("deepinfer_pd_handoff_bytes_total", "bytes of page bundles sent",
          static_cast<double>(c.bytes_sent), out);
  Counter("deepinfer_pd_handoff_seconds_total", "export + transfer + import time of hand-offs",
          c.seconds, out);
  Counter("deepinfer_pd_bundles_received_total", "page bundles imported (decode side)",
          static_cast<double>(c.bundles_received), out);
  Counter("deepinfer_pd_pages_imported_total", "pages registered from hand-offs (decode side)",
          static_cast<double>(c.pages_imported), out);
  Counter("deepinfer_pd_tails_held_total",
          "hand-offs whose sequence tail is held for its request (decode side)",
          static_cast<double>(c.tails_held), out);
  Counter("deepinfer_pd_bundles_refused_total",
          "page bundles refused: malformed, fingerprint, checksum (decode side)",
          static_cast<double>(c.receive_failures), out);
}

}  // namespace deepinfer::server
