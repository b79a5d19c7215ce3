// `deepinfer bench`: offline throughput of a model folder through the Engine (random prompt ids,
// ignore_eos, max_tokens = decode_len), reported against the read bandwidth and compute peak
// measured in the same process (core/machine_limits.h) right before and after each
// configuration. docs/performance.md ("Benchmark tools") explains every field.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/phase_timer.h"
#include "core/status.h"
#include "engine/spec/spec_stats.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

struct OfflineConfig {
  int64_t batch = 1;        // prompts added at once
  int64_t prompt_len = 0;   // tokens per prompt (random ids)
  int64_t decode_len = 16;  // max_tokens per request (ignore_eos: exactly this many)
  int64_t run = 0;          // which repetition (--runs); with the seed, picks the prompts
};

// What a decode step reads, estimated from the loaded weights (model/deepseek_v41/cost_model.h
// counts batch 1): every dense weight once, plus the routed experts the batch activates. With B
// rows each choosing k of E experts uniformly and independently, a layer touches on average
// E * (1 - (1 - k/E)^B) distinct experts (k at B = 1, -> E for large B). KV-cache reads are not
// counted (weights only).
struct DecodeTraffic {
  int64_t dense_bytes = 0;      // all weights a batch-1 step reads but the routed experts
  int64_t expert_bytes = 0;     // the routed experts a batch-1 step reads (k per layer)
  double expected_experts = 0;  // distinct routed experts per step, summed over layers
  int64_t bytes_per_step = 0;   // dense + expected distinct experts x expert size
};
DecodeTraffic EstimateDecodeTraffic(const model::Model& model, int64_t batch);

// Flops (2 per multiply-add, cost_model.h's accounting) of one decode token at `position`.
double DecodeFlopsPerToken(const model::Model& model, int64_t position);

// One phase (core/phase_timer.h) of the decode window, per forward call.
struct PhaseStep {
  std::string phase;
  double ms = 0;     // wall time per forward call
  double calls = 0;  // calls per forward call
};
// (end - begin) of every phase over the forward calls between the two readings (the "forward"
// phase's count), longest first; no phases when no forward call completed between them.
struct PhaseProfile {
  int64_t forwards = 0;
  std::vector<PhaseStep> phases;
};
PhaseProfile PerForwardPhases(const std::map<std::string, PhaseTotal>& begin,
                              const std::map<std::string, PhaseTotal>& end);

struct OfflineResult {
  OfflineConfig config;
  double ttft_mean_s = 0, ttft_max_s = 0;  // from the Add of the whole batch
  double prefill_tokens_per_s = 0;         // batch * prompt_len / max TTFT
  double prefill_gflops = 0;               // PrefillFlops(prompt_len) * batch / max TTFT
  // Steady state: from the last request's first token to the first request's last token, when
  // every request of the batch is decoding; nullopt when that window is empty (decode_len < 3).
  std::optional<double> decode_tokens_per_s;
  std::optional<double> decode_step_ms;
  std::optional<double> decode_gbs;     // bytes_per_step / step time
  std::optional<double> decode_gflops;  // batch * DecodeFlopsPerToken(mid position) / step time
  DecodeTraffic traffic;
  // The step time the limits measured in this run allow: the larger of bytes_per_step at the
  // measured read rate and the step's flops at the measured peak (a roofline bound).
  std::optional<double> decode_bound_step_ms;
  // Speculative decoding counters of this configuration (engine stats after - before); absent
  // when speculation is off.
  std::optional<engine::spec::SpecCounters> spec;
  double measured_bandwidth_gbs = 0;  // median of the paired reads before + after
  double bandwidth_min_gbs = 0, bandwidth_max_gbs = 0;
  double measured_peak_gflops = 0;  // median of the peak runs before + after
  double total_s = 0;
  int64_t steps = 0;
  // Engine wall time of the configuration (EngineStats after - before): in steps, in the model's
  // forward calls, in speculative verification + drafting.
  double engine_step_s = 0, forward_s = 0, spec_s = 0;
  int threads = 0;  // per rank
  int ranks = 1;    // MPI ranks of the instance (mpirun -n)
  // Expert parallel: MB all ranks sent over MPI per step (activations out, products back), and
  // milliseconds inside MPI per step of the rank that spent least there (the others' include
  // waiting for a slower rank).
  std::optional<double> ep_mb_per_step, ep_mpi_ms_per_step;
  double load_avg_1m = -1;  // /proc/loadavg at the start (-1 when unreadable)
  // Prompt tokens the prefix cache served, summed over the batch: 0 unless the prompts repeat
  // an earlier configuration's (they never should: each configuration and run draws its own).
  int64_t prefix_hit_tokens = 0;
  // With DEEPINFER_PROFILE=1: the phases of the steady decode window per forward call, longest
  // first (this rank's; PerForwardPhases), and how many forward calls that was. Else empty.
  PhaseProfile decode_phases;

  // The ratios the report leads with. Prefill GFLOP/s over the measured peak.
  double ComputeFraction() const { return prefill_gflops / measured_peak_gflops; }
  // Decode GB/s over the best probe before and after the run (the stricter ratio: host noise only
  // pulls probes down); nullopt without a decode window.
  std::optional<double> BandwidthFractionOfBest() const;
  // The roofline bound over the measured step (the fraction of the bound reached).
  std::optional<double> BoundFraction() const;
  nlohmann::ordered_json ToJson() const;
};

struct PrefixHitResult {
  int64_t shared_prefix = 0, suffix_len = 0;
  double cold_ttft_s = 0, hit_ttft_s = 0;  // medians over the repeats
  int64_t prefix_hit_tokens = 0;           // reported by the engine for the last hit request
  int repeats = 0;
  double load_avg_1m = -1;
  nlohmann::ordered_json ToJson() const;
};

struct BenchOptions {
  uint64_t seed = 1;
  int limit_samples = 3;     // paired reads before and after each configuration
  bool warmup = true;        // one short request before the first configuration
  bool report_spec = false;  // speculative decoding is on: report its counters
};

// Measures one configuration on an idle engine (returns with the engine idle again).
StatusOr<OfflineResult> RunOfflineConfig(LoadedEngine& e, const OfflineConfig& config,
                                         const BenchOptions& options);

// TTFT of a prompt of shared_prefix + suffix_len tokens whose first shared_prefix tokens are in
// the prefix cache, against the same shape cold (a fresh prefix), max_tokens 1; `repeats` pairs
// with fresh prefixes. Needs the prefix cache on.
StatusOr<PrefixHitResult> RunPrefixHit(LoadedEngine& e, int64_t shared_prefix, int64_t suffix_len,
                                       int repeats, const BenchOptions& options);

// One short request (warms the page pool, the kernels' scratch and the sampler).
Status Warmup(LoadedEngine& e);

// The 1-minute load average from /proc/loadavg, -1 when unreadable.
double LoadAverage1m();

}  // namespace deepinfer::tools
