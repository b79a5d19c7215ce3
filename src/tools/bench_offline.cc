#include "tools/bench_offline.h"

#include "dist/mpi_world.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "core/machine_limits.h"
#include "core/splitmix64.h"
#include "core/thread_pool.h"
#include "dist/mpi_world.h"
#include "engine/engine.h"
#include "model/deepseek_v41/cost_model.h"
#include "tools/bench_stats.h"

namespace deepinfer::tools {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Bytes one routed expert streams, as the kernels store it (cost_model.cc counts the same).
int64_t ExpertBytes(const model::ExpertWeights& e, const model::ModelConfig& c) {
  if (e.w13) return static_cast<int64_t>(e.w13->bytes() + e.w2->bytes());
  if (e.w1_mapped.weight) return 3 * static_cast<int64_t>(c.moe_inter_dim) * c.dim * 17 / 32;
  auto plain = [](const model::PlainMatrix& m) {
    return m.data ? m.n * m.k * (m.dtype == DType::kF32 ? 4 : 2) : int64_t{0};
  };
  return plain(e.w1_bf16) + plain(e.w3_bf16) + plain(e.w2_bf16);
}

std::vector<int32_t> RandomIds(std::mt19937_64& rng, int64_t n, int64_t vocab) {
  // Ids 2 .. vocab-1 (0 and 1 are bos/eos in the released config; the model does not care).
  std::uniform_int_distribution<int32_t> dist(2, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& v : ids) v = dist(rng);
  return ids;
}

// Read bandwidth and compute peak samples taken around a measurement.
struct LimitSamples {
  std::vector<double> gbps, gflops;
  void Take(ReadBandwidthProbe& probe, ThreadPool* pool, int n) {
    for (int i = 0; i < n; ++i) gbps.push_back(probe.ReadGbps());
    gflops.push_back(PeakGflopsOnce(1'000'000, pool));  // ~12 ms per thread on Zen 5
  }
};

struct RequestTrace {
  std::optional<Clock::time_point> first;
  Clock::time_point last;
  int64_t n_output = 0;
  bool error = false;
  std::string message;
  int64_t prefix_hit = 0;
};

struct Delivery {
  Clock::time_point t;
  int64_t tokens;
};

// The phase totals (DEEPINFER_PROFILE=1) at the edges of the steady decode window: when the last
// request of the batch gets its first token, and when the first request finishes.
struct PhaseWindow {
  int64_t requests = 0;  // of this rank
  int64_t started = 0;   // requests with a first token
  std::optional<std::map<std::string, PhaseTotal>> begin, end;
};

engine::Request MakeRequest(std::vector<int32_t> prompt, int64_t max_tokens, RequestTrace* trace,
                            std::vector<Delivery>* deliveries, PhaseWindow* window = nullptr) {
  engine::Request r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.params.temperature = 0.0f;
  r.on_output = [trace, deliveries, window](const engine::RequestOutput& o) {
    const Clock::time_point now = Clock::now();
    if (!o.new_tokens.empty()) {
      if (!trace->first && window && ++window->started == window->requests) {
        window->begin = PhaseTotalsNow();
      }
      if (!trace->first) trace->first = now;
      trace->last = now;
      if (deliveries) deliveries->push_back({now, static_cast<int64_t>(o.new_tokens.size())});
    }
    if (o.finished && window && window->begin && !window->end) window->end = PhaseTotalsNow();
    trace->n_output = o.n_output;
    trace->prefix_hit = std::max(trace->prefix_hit, o.prefix_hit_tokens);
    if (o.finished && *o.finished == engine::FinishReason::kError) {
      trace->error = true;
      trace->message = o.error.ToString();
    }
  };
  return r;
}

engine::spec::SpecCounters SpecDelta(const engine::spec::SpecCounters& before,
                                     const engine::spec::SpecCounters& after) {
  engine::spec::SpecCounters d;
  d.draft_calls = after.draft_calls - before.draft_calls;
  d.drafted = after.drafted - before.drafted;
  d.verify_calls = after.verify_calls - before.verify_calls;
  d.verified = after.verified - before.verified;
  d.accepted = after.accepted - before.accepted;
  d.accept_histogram = after.accept_histogram;
  for (size_t k = 0; k < before.accept_histogram.size() && k < d.accept_histogram.size(); ++k) {
    d.accept_histogram[k] -= before.accept_histogram[k];
  }
  return d;
}

nlohmann::ordered_json SpecJson(const engine::spec::SpecCounters& s, int64_t steps) {
  nlohmann::ordered_json j;
  j["draft_calls"] = s.draft_calls;
  j["drafted"] = s.drafted;
  j["verify_calls"] = s.verify_calls;
  j["verified"] = s.verified;
  j["accepted"] = s.accepted;
  j["drafted_per_step"] = steps > 0 ? static_cast<double>(s.drafted) / steps : 0.0;
  j["accepted_per_step"] = steps > 0 ? static_cast<double>(s.accepted) / steps : 0.0;
  // Mean tokens a verify call yields (accepted drafts + the target's own token).
  j["mean_acceptance_length"] =
      s.verify_calls > 0 ? 1.0 + static_cast<double>(s.accepted) / s.verify_calls : 0.0;
  j["accept_histogram"] = s.accept_histogram;
  return j;
}

Status CheckTraces(const std::vector<RequestTrace>& traces) {
  for (const RequestTrace& t : traces) {
    if (t.error) return Internal("a benchmark request failed: " + t.message);
    if (!t.first) return Internal("a benchmark request produced no token");
  }
  return Status::Ok();
}

}  // namespace

double LoadAverage1m() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  if (!(f >> v)) return -1;
  return v;
}

DecodeTraffic EstimateDecodeTraffic(const model::Model& model, int64_t batch) {
  const model::ModelConfig& c = model.config();
  DecodeTraffic t;
  const int64_t total = model::DecodeWeightBytesPerToken(model);
  double expert_total = 0;
  for (int li = 0; li < c.n_layers; ++li) {
    const model::LayerDescriptor& d = model.layers()[li];
    const model::MoeWeights& moe = model.weights().layers[li].moe;
    if (moe.experts.empty() || d.n_activated_experts == 0) continue;
    const int64_t one = ExpertBytes(moe.experts[0], c);
    const double n_experts = static_cast<double>(moe.experts.size());
    const double k = d.n_activated_experts;
    t.expert_bytes += static_cast<int64_t>(k) * one;
    const double distinct =
        n_experts * (1.0 - std::pow(1.0 - k / n_experts, static_cast<double>(batch)));
    t.expected_experts += distinct;
    expert_total += distinct * static_cast<double>(one);
  }
  t.dense_bytes = total - t.expert_bytes;
  t.bytes_per_step = t.dense_bytes + static_cast<int64_t>(std::llround(expert_total));
  return t;
}

double DecodeFlopsPerToken(const model::Model& model, int64_t position) {
  // PrefillFlops counts the head once per call: the difference of two prefixes is one row's
  // projections and attention, plus the head the decode row also runs.
  const model::ModelConfig& c = model.config();
  return model::PrefillFlops(model, position + 1) - model::PrefillFlops(model, position) +
         2.0 * static_cast<double>(c.vocab_size) * c.dim;
}

Status Warmup(LoadedEngine& e) {
  std::mt19937_64 rng(99);
  RequestTrace trace;
  const int64_t vocab = e.model->config().vocab_size;
  DI_RETURN_IF_ERROR(
      e.engine->Add(MakeRequest(RandomIds(rng, 16, vocab), 4, &trace, nullptr)).status());
  DI_RETURN_IF_ERROR(e.RunUntilIdle());
  return CheckTraces({trace});
}

StatusOr<OfflineResult> RunOfflineConfig(LoadedEngine& e, const OfflineConfig& cfg,
                                         const BenchOptions& options) {
  if (cfg.batch < 1 || cfg.prompt_len < 1 || cfg.decode_len < 1) {
    return InvalidArgument("bench: batch, prompt length and decode length must be positive");
  }
  if (!e.engine->idle()) return InvalidArgument("bench: the engine is not idle");
  const model::Model& m = *e.model;
  ThreadPool* pool = &m.pool();
  OfflineResult r;
  r.config = cfg;
  r.threads = pool->size();
  r.load_avg_1m = LoadAverage1m();
  r.traffic = EstimateDecodeTraffic(m, cfg.batch);
  // The paired read streams what one decode step streams (at least 1 MiB).
  ReadBandwidthProbe probe(
      static_cast<size_t>(std::max<int64_t>(r.traffic.bytes_per_step, int64_t{1} << 20)), pool);
  LimitSamples limits;
  limits.Take(probe, pool, options.limit_samples);

  // Prompts of their own for every configuration and run: a repeat of earlier prompts would be
  // served from the prefix cache (prefix_hit_tokens says so).
  std::mt19937_64 rng(MixSeed(options.seed, {cfg.batch, cfg.prompt_len, cfg.decode_len, cfg.run}));
  const int64_t vocab = m.config().vocab_size;
  // Over N ranks (one instance), rank k runs requests k, k + N, ... of the same batch; a rank
  // left without one still serves its experts.
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  const int64_t n_ranks = world.size();
  r.ranks = static_cast<int>(n_ranks);
  const int64_t mine = (cfg.batch - world.rank() + n_ranks - 1) / n_ranks;
  std::vector<RequestTrace> traces(static_cast<size_t>(mine));
  std::vector<Delivery> deliveries;
  deliveries.reserve(static_cast<size_t>(mine * cfg.decode_len));
  std::vector<engine::Request> requests;
  PhaseWindow phases;
  phases.requests = mine;
  PhaseWindow* const profile = PhaseTimingEnabled() && mine > 0 ? &phases : nullptr;
  for (int64_t i = 0; i < cfg.batch; ++i) {
    std::vector<int32_t> prompt = RandomIds(rng, cfg.prompt_len, vocab);
    if (i % n_ranks != world.rank()) continue;
    requests.push_back(MakeRequest(std::move(prompt), cfg.decode_len, &traces[requests.size()],
                                   &deliveries, profile));
  }
  // Expert-parallel counters before the run (read only when e.experts is set).
  const dist::ExpertParallelStats ep0 =
      e.experts ? e.experts->stats() : dist::ExpertParallelStats{};
  const engine::EngineStats stats0 = e.engine->stats();
  // Every rank starts the clock together (the paired limit samples above take each rank its
  // own time, and a rank's first MoE call waits for all of them).
  world.MaxAll(0.0);
  const Clock::time_point t0 = Clock::now();
  for (engine::Request& req : requests) {
    DI_RETURN_IF_ERROR(e.engine->Add(std::move(req)).status());
  }
  DI_RETURN_IF_ERROR(e.RunUntilIdle());
  const Clock::time_point t_end = Clock::now();
  const engine::EngineStats stats1 = e.engine->stats();
  r.steps = stats1.steps - stats0.steps;
  r.engine_step_s = stats1.step_seconds - stats0.step_seconds;
  r.forward_s = stats1.forward_seconds - stats0.forward_seconds;
  r.spec_s = stats1.spec_seconds - stats0.spec_seconds;
  if (options.report_spec) r.spec = SpecDelta(stats0.spec, stats1.spec);
  r.total_s = Seconds(t0, t_end);
  DI_RETURN_IF_ERROR(CheckTraces(traces));
  limits.Take(probe, pool, options.limit_samples);

  Clock::time_point all_first = t0, first_done = t_end;
  double ttft_sum = 0;
  int64_t prefix_hit = 0;
  for (const RequestTrace& t : traces) {
    prefix_hit += t.prefix_hit;
    const double ttft = Seconds(t0, *t.first);
    ttft_sum += ttft;
    r.ttft_max_s = std::max(r.ttft_max_s, ttft);
    all_first = std::max(all_first, *t.first);
    first_done = std::min(first_done, t.last);
  }
  // The instance: the slowest rank's times, all ranks' tokens.
  r.ttft_max_s = world.MaxAll(r.ttft_max_s);
  r.ttft_mean_s = world.SumAll(ttft_sum) / static_cast<double>(cfg.batch);
  r.total_s = world.MaxAll(r.total_s);
  r.prefix_hit_tokens = static_cast<int64_t>(world.SumAll(static_cast<double>(prefix_hit)));
  const double prompt_tokens = static_cast<double>(cfg.batch * cfg.prompt_len);
  r.prefill_tokens_per_s = prompt_tokens / r.ttft_max_s;
  r.prefill_gflops =
      model::PrefillFlops(m, cfg.prompt_len) * static_cast<double>(cfg.batch) / r.ttft_max_s * 1e-9;

  int64_t window_tokens = 0;
  for (const Delivery& d : deliveries) {
    if (d.t > all_first && d.t <= first_done) window_tokens += d.tokens;
  }
  const double window_s = Seconds(all_first, first_done);
  const bool has_window = mine == 0 || (window_tokens > 0 && window_s > 0);
  const bool window = world.MaxAll(has_window ? 0.0 : 1.0) == 0.0;
  if (e.experts) {
    const dist::ExpertParallelStats& ep1 = e.experts->stats();
    const double steps = std::max<double>(1.0, static_cast<double>(r.steps));
    r.ep_mb_per_step =
        world.SumAll(static_cast<double>(ep1.bytes_sent - ep0.bytes_sent)) / 1e6 / steps;
    // The rank that waited least: its time in MPI is the exchange itself, not waiting for
    // another rank's compute.
    r.ep_mpi_ms_per_step =
        -world.MaxAll(-(ep1.exchange_seconds - ep0.exchange_seconds)) * 1e3 / steps;
  }
  if (window) {
    // Each rank decodes its share in its own window; the instance's rate is their sum.
    const double tps =
        world.SumAll(mine == 0 ? 0.0 : static_cast<double>(window_tokens) / window_s);
    const double step_s = static_cast<double>(cfg.batch) / tps;
    r.decode_tokens_per_s = tps;
    r.decode_step_ms = step_s * 1e3;
    r.decode_gbs = static_cast<double>(r.traffic.bytes_per_step) / step_s * 1e-9;
    const int64_t mid = cfg.prompt_len + cfg.decode_len / 2;
    r.decode_gflops = static_cast<double>(cfg.batch) * DecodeFlopsPerToken(m, mid) / step_s * 1e-9;
  }
  if (phases.begin && phases.end) r.decode_phases = PerForwardPhases(*phases.begin, *phases.end);
  const Distribution bw = Summarize(limits.gbps);
  r.measured_bandwidth_gbs = bw.p50;
  r.bandwidth_min_gbs = bw.min;
  r.bandwidth_max_gbs = bw.max;
  r.measured_peak_gflops = Percentile(limits.gflops, 50);
  if (r.decode_step_ms && r.decode_gflops) {
    const double flops_per_step = *r.decode_gflops * 1e9 * (*r.decode_step_ms * 1e-3);
    const double bytes_s =
        static_cast<double>(r.traffic.bytes_per_step) / (r.measured_bandwidth_gbs * 1e9);
    const double compute_s = flops_per_step / (r.measured_peak_gflops * 1e9);
    r.decode_bound_step_ms = std::max(bytes_s, compute_s) * 1e3;
  }
  return r;
}

StatusOr<PrefixHitResult> RunPrefixHit(LoadedEngine& e, int64_t shared_prefix, int64_t suffix_len,
                                       int repeats, const BenchOptions& options) {
  if (shared_prefix < 1 || suffix_len < 1 || repeats < 1) {
    return InvalidArgument("bench: --shared-prefix, --suffix-len and --repeat must be positive");
  }
  if (!e.engine->idle()) return InvalidArgument("bench: the engine is not idle");
  PrefixHitResult r;
  r.shared_prefix = shared_prefix;
  r.suffix_len = suffix_len;
  r.repeats = repeats;
  r.load_avg_1m = LoadAverage1m();
  std::mt19937_64 rng(options.seed * 7919 + static_cast<uint64_t>(shared_prefix));
  const int64_t vocab = e.model->config().vocab_size;
  std::vector<double> cold, hit;
  auto ttft_of = [&](std::vector<int32_t> prompt, RequestTrace* trace) -> StatusOr<double> {
    const Clock::time_point t0 = Clock::now();
    DI_RETURN_IF_ERROR(e.engine->Add(MakeRequest(std::move(prompt), 1, trace, nullptr)).status());
    DI_RETURN_IF_ERROR(e.RunUntilIdle());
    DI_RETURN_IF_ERROR(CheckTraces({*trace}));
    return Seconds(t0, *trace->first);
  };
  for (int rep = 0; rep < repeats; ++rep) {
    const std::vector<int32_t> prefix = RandomIds(rng, shared_prefix, vocab);
    auto with_suffix = [&] {
      std::vector<int32_t> p = prefix;
      const std::vector<int32_t> s = RandomIds(rng, suffix_len, vocab);
      p.insert(p.end(), s.begin(), s.end());
      return p;
    };
    RequestTrace cold_trace, hit_trace;
    DI_ASSIGN_OR_RETURN(double c, ttft_of(with_suffix(), &cold_trace));
    DI_ASSIGN_OR_RETURN(double h, ttft_of(with_suffix(), &hit_trace));
    if (cold_trace.prefix_hit != 0) {
      return Internal("bench: the cold request found " + std::to_string(cold_trace.prefix_hit) +
                      " cached tokens");
    }
    cold.push_back(c);
    hit.push_back(h);
    r.prefix_hit_tokens = hit_trace.prefix_hit;
  }
  r.cold_ttft_s = Percentile(cold, 50);
  r.hit_ttft_s = Percentile(hit, 50);
  return r;
}

PhaseProfile PerForwardPhases(const std::map<std::string, PhaseTotal>& begin,
                              const std::map<std::string, PhaseTotal>& end) {
  auto delta = [&](const std::string& name, const PhaseTotal& e) {
    const auto b = begin.find(name);
    return b == begin.end() ? e
                            : PhaseTotal{e.seconds - b->second.seconds, e.calls - b->second.calls};
  };
  PhaseProfile p;
  const auto fwd = end.find("forward");
  if (fwd == end.end()) return p;
  p.forwards = delta(fwd->first, fwd->second).calls;
  if (p.forwards <= 0) return PhaseProfile{};
  const double n = static_cast<double>(p.forwards);
  for (const auto& [name, e] : end) {
    const PhaseTotal d = delta(name, e);
    if (d.calls > 0)
      p.phases.push_back({name, d.seconds * 1e3 / n, static_cast<double>(d.calls) / n});
  }
  std::stable_sort(p.phases.begin(), p.phases.end(),
                   [](const PhaseStep& a, const PhaseStep& b) { return a.ms > b.ms; });
  return p;
}

std::optional<double> OfflineResult::BandwidthFractionOfBest() const {
  if (!decode_gbs) return std::nullopt;
  return *decode_gbs / bandwidth_max_gbs;
}

std::optional<double> OfflineResult::BoundFraction() const {
  if (!decode_bound_step_ms || !decode_step_ms) return std::nullopt;
  return *decode_bound_step_ms / *decode_step_ms;
}

nlohmann::ordered_json OfflineResult::ToJson() const {
  nlohmann::ordered_json j;
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  };
  j["mode"] = "throughput";
  j["batch"] = config.batch;
  j["prompt_len"] = config.prompt_len;
  j["decode_len"] = config.decode_len;
  j["run"] = config.run;
  j["prefix_hit_tokens"] = prefix_hit_tokens;
  j["threads"] = threads;
  j["ranks"] = ranks;
  j["ep_mb_per_step"] = ep_mb_per_step ? nlohmann::ordered_json(*ep_mb_per_step) : nullptr;
  j["ep_mpi_ms_per_step"] =
      ep_mpi_ms_per_step ? nlohmann::ordered_json(*ep_mpi_ms_per_step) : nullptr;
  j["ttft_mean_ms"] = ttft_mean_s * 1e3;
  j["ttft_max_ms"] = ttft_max_s * 1e3;
  j["prefill_tokens_per_s"] = prefill_tokens_per_s;
  j["prefill_gflops"] = prefill_gflops;
  j["decode_tokens_per_s"] = opt(decode_tokens_per_s);
  j["decode_step_ms"] = opt(decode_step_ms);
  j["weight_bytes_per_decode_step"] = traffic.bytes_per_step;
  j["dense_weight_bytes"] = traffic.dense_bytes;
  j["expected_experts_per_step"] = traffic.expected_experts;
  j["decode_gbs"] = opt(decode_gbs);
  j["decode_gflops"] = opt(decode_gflops);
  j["measured_bandwidth_gbs"] = measured_bandwidth_gbs;
  j["measured_bandwidth_min_gbs"] = bandwidth_min_gbs;
  j["measured_bandwidth_max_gbs"] = bandwidth_max_gbs;
  j["bandwidth_fraction"] =
      decode_gbs ? nlohmann::ordered_json(*decode_gbs / measured_bandwidth_gbs) : nullptr;
  j["bandwidth_fraction_of_best"] = opt(BandwidthFractionOfBest());
  j["measured_peak_gflops"] = measured_peak_gflops;
  j["peak_instruction"] = PeakInstructionName();
  j["compute_fraction"] = ComputeFraction();
  j["decode_compute_fraction"] =
      decode_gflops ? nlohmann::ordered_json(*decode_gflops / measured_peak_gflops) : nullptr;
  j["decode_bound_step_ms"] = opt(decode_bound_step_ms);
  j["decode_bound_fraction"] = opt(BoundFraction());
  j["spec"] = spec ? SpecJson(*spec, steps) : nlohmann::ordered_json();
  j["steps"] = steps;
  j["total_s"] = total_s;
  j["engine_step_s"] = engine_step_s;
  j["forward_s"] = forward_s;
  j["spec_s"] = spec_s;
  // The engine's own share of its step time (scheduling, sampling, undelivered outputs).
  j["scheduling_fraction"] = engine::SchedulingFraction(engine_step_s, forward_s, spec_s);
  j["load_avg_1m"] = load_avg_1m;
  if (decode_phases.phases.empty()) {
    j["decode_phases"] = nullptr;
  } else {
    nlohmann::ordered_json phases = nlohmann::ordered_json::array();
    for (const PhaseStep& p : decode_phases.phases) {
      phases.push_back(
          {{"phase", p.phase}, {"ms_per_forward", p.ms}, {"calls_per_forward", p.calls}});
    }
    j["decode_phases"] = std::move(phases);
  }
  j["decode_phase_forwards"] = decode_phases.forwards;
  return j;
}

nlohmann::ordered_json PrefixHitResult::ToJson() const {
  nlohmann::ordered_json j;
  j["mode"] = "shared_prefix";
  j["shared_prefix"] = shared_prefix;
  j["suffix_len"] = suffix_len;
  j["repeats"] = repeats;
  j["cold_ttft_ms"] = cold_ttft_s * 1e3;
  j["hit_ttft_ms"] = hit_ttft_s * 1e3;
  j["hit_over_cold"] = cold_ttft_s > 0 ? hit_ttft_s / cold_ttft_s : 0.0;
  j["prefix_hit_tokens"] = prefix_hit_tokens;
  j["load_avg_1m"] = load_avg_1m;
  return j;
}

}  // namespace deepinfer::tools
