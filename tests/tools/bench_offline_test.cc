// `deepinfer bench` on the tiny fixture model: the decode-traffic estimate against the model's
// batch-1 cost model, and the command's --json output (run as a process) well formed with
// positive rates and fractions in (0, 1.5), and a prefix hit that really hits.
#include "tools/bench_offline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/deepseek_v41/cost_model.h"

namespace deepinfer::tools {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kModel = DEEPINFER_SHARED_DIR "/fixtures/v41-tiny-a";

std::string Binary() {
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "deepinfer").string();
}

std::vector<Json> RunJsonLines(const std::string& args) {
  const std::string command = "'" + Binary() + "' " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  std::string out;
  char buf[4096];
  size_t n;
  while (pipe && (n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pipe ? pclose(pipe) : -1, 0) << command;
  std::vector<Json> lines;
  size_t start = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != '\n') continue;
    lines.push_back(Json::parse(out.substr(start, i - start)));
    start = i + 1;
  }
  EXPECT_EQ(start, out.size());
  return lines;
}

TEST(BenchOfflineTest, DecodeTrafficMatchesTheCostModelAtBatchOne) {
  EngineFlags flags;
  flags.kv_budget = "64M";
  auto e = LoadEngine(kModel, "", flags);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const model::Model& m = *e->model;
  const DecodeTraffic t1 = EstimateDecodeTraffic(m, 1);
  EXPECT_EQ(t1.bytes_per_step, model::DecodeWeightBytesPerToken(m));
  EXPECT_GT(t1.dense_bytes, 0);
  EXPECT_GT(t1.expert_bytes, 0);
  // 6 backbone layers, top-2 of 4 experts each: 12 experts at batch 1; at batch B the expected
  // distinct count per layer is 4 * (1 - (1/2)^B).
  EXPECT_NEAR(t1.expected_experts, 12.0, 1e-9);
  const DecodeTraffic t2 = EstimateDecodeTraffic(m, 2);
  EXPECT_NEAR(t2.expected_experts, 6 * 4 * (1 - 0.25), 1e-9);
  const DecodeTraffic t64 = EstimateDecodeTraffic(m, 64);
  EXPECT_NEAR(t64.expected_experts, 24.0, 1e-6);
  EXPECT_EQ(t64.dense_bytes, t1.dense_bytes);
  EXPECT_EQ(t64.bytes_per_step, t1.dense_bytes + 2 * t1.expert_bytes);  // all 4 of 4 = 2 x top-2
  EXPECT_GT(t2.bytes_per_step, t1.bytes_per_step);
  // One decode row costs more than the projections alone and grows with the context.
  EXPECT_GT(DecodeFlopsPerToken(m, 100), DecodeFlopsPerToken(m, 0));
}

TEST(BenchOfflineTest, JsonSweepIsWellFormed) {
  const auto lines =
      RunJsonLines("bench --model '" + kModel +
                   "' --batch 1,3 --prompt-len 24 --decode-len 8 --json --limit-samples 2 "
                   "--kv-budget 64M --shared-prefix 128 --suffix-len 8");
  ASSERT_EQ(lines.size(), 3u);  // two throughput configurations, then the prefix-hit pair
  for (int i = 0; i < 2; ++i) {
    const Json& j = lines[i];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["mode"], "throughput");
    EXPECT_EQ(j["batch"], i == 0 ? 1 : 3);
    EXPECT_EQ(j["prompt_len"], 24);
    for (const char* key :
         {"prefill_tokens_per_s", "decode_tokens_per_s", "measured_bandwidth_gbs",
          "measured_peak_gflops", "prefill_gflops", "decode_gbs", "decode_step_ms"}) {
      ASSERT_TRUE(j[key].is_number()) << key;
      EXPECT_GT(j[key].get<double>(), 0.0) << key;
    }
    EXPECT_GT(j["weight_bytes_per_decode_step"].get<int64_t>(), 0);
    for (const char* key :
         {"bandwidth_fraction", "bandwidth_fraction_of_best", "compute_fraction"}) {
      ASSERT_TRUE(j[key].is_number()) << key;
      EXPECT_GT(j[key].get<double>(), 0.0) << key;
      // Loose: the paired read swings several-fold with host load (a decode step can outrun the
      // probe's median); this catches unit errors (x1000), not measurement noise.
      EXPECT_LT(j[key].get<double>(), 5.0) << key;
    }
    // The fractions are the ratios of the reported rates.
    EXPECT_NEAR(j["bandwidth_fraction"].get<double>(),
                j["decode_gbs"].get<double>() / j["measured_bandwidth_gbs"].get<double>(), 1e-9);
    EXPECT_NEAR(j["bandwidth_fraction_of_best"].get<double>(),
                j["decode_gbs"].get<double>() / j["measured_bandwidth_max_gbs"].get<double>(),
                1e-9);
    // The best probe is at least the median one, so this ratio is never the larger.
    EXPECT_LE(j["bandwidth_fraction_of_best"].get<double>(), j["bandwidth_fraction"].get<double>());
    EXPECT_NEAR(j["compute_fraction"].get<double>(),
                j["prefill_gflops"].get<double>() / j["measured_peak_gflops"].get<double>(), 1e-9);
    // Bytes per step at batch B: decode GB/s = bytes / step time.
    EXPECT_NEAR(j["decode_gbs"].get<double>(),
                j["weight_bytes_per_decode_step"].get<double>() /
                    (j["decode_step_ms"].get<double>() * 1e-3) * 1e-9,
                1e-6 * j["decode_gbs"].get<double>());
    EXPECT_LE(j["ttft_mean_ms"].get<double>(), j["ttft_max_ms"].get<double>());
    // The roofline bound: the larger of the step's bytes at the read rate and its flops at the
    // peak, so never below either; the fraction is bound / measured step.
    const double bound = j["decode_bound_step_ms"].get<double>();
    const double step = j["decode_step_ms"].get<double>();
    EXPECT_GE(bound * (1 + 1e-9), j["weight_bytes_per_decode_step"].get<double>() /
                                      (j["measured_bandwidth_gbs"].get<double>() * 1e9) * 1e3);
    EXPECT_GE(bound * (1 + 1e-9),
              j["decode_gflops"].get<double>() * step / j["measured_peak_gflops"].get<double>());
    EXPECT_NEAR(j["decode_bound_fraction"].get<double>(), bound / step, 1e-9);
    EXPECT_TRUE(j["spec"].is_null());  // speculation off
    // Engine time: the forward calls are inside the steps, which are inside the run; without
    // speculation no spec time; the scheduling fraction is what the steps spent elsewhere.
    const double step_s = j["engine_step_s"].get<double>();
    const double forward_s = j["forward_s"].get<double>();
    EXPECT_GT(forward_s, 0.0);
    EXPECT_LE(forward_s, step_s);
    EXPECT_LE(step_s, j["total_s"].get<double>());
    EXPECT_EQ(j["spec_s"].get<double>(), 0.0);
    EXPECT_NEAR(j["scheduling_fraction"].get<double>(), (step_s - forward_s) / step_s, 1e-12);
  }
  EXPECT_GT(lines[1]["weight_bytes_per_decode_step"].get<int64_t>(),
            lines[0]["weight_bytes_per_decode_step"].get<int64_t>());
  const Json& p = lines[2];
  SCOPED_TRACE(p.dump());
  EXPECT_EQ(p["mode"], "shared_prefix");
  EXPECT_GT(p["cold_ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(p["hit_ttft_ms"].get<double>(), 0.0);
  // The cache holds whole pages of the prefix: at least one, at most the 128 shared tokens.
  EXPECT_GT(p["prefix_hit_tokens"].get<int64_t>(), 0);
  EXPECT_LE(p["prefix_hit_tokens"].get<int64_t>(), 128);
}

// --runs 3: three run lines, then a summary whose median and range are those of the runs' ratios.
// Every run and configuration draws its own prompts, so none is served from the prefix cache
// (with the same prompts a repeat's prefill would be a cache hit, and its rate meaningless).
TEST(BenchOfflineTest, RunsPrintsEachRunThenTheirSummary) {
  const auto lines = RunJsonLines("bench --model '" + kModel +
                                  "' --batch 1 --prompt-len 160 --decode-len 8,6 --runs 3 --json "
                                  "--limit-samples 1 --kv-budget 64M --prefix-cache on");
  ASSERT_EQ(lines.size(), 8u);  // per decode length: three runs, then their summary
  for (int i = 0; i < 8; ++i) {
    if (i % 4 == 3) continue;
    SCOPED_TRACE(lines[i].dump());
    EXPECT_EQ(lines[i]["run"], i % 4);
    EXPECT_EQ(lines[i]["prefix_hit_tokens"], 0);
  }
  std::vector<double> of_best, compute;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(lines[i]["mode"], "throughput");
    of_best.push_back(lines[i]["bandwidth_fraction_of_best"].get<double>());
    compute.push_back(lines[i]["compute_fraction"].get<double>());
  }
  std::sort(of_best.begin(), of_best.end());
  std::sort(compute.begin(), compute.end());
  const Json& s = lines[3];
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(s["mode"], "runs");
  EXPECT_EQ(s["runs"], 3);
  EXPECT_EQ(s["batch"], 1);
  EXPECT_EQ(s["bandwidth_fraction_of_best"]["count"], 3);
  EXPECT_NEAR(s["bandwidth_fraction_of_best"]["p50"].get<double>(), of_best[1], 1e-12);
  EXPECT_NEAR(s["bandwidth_fraction_of_best"]["min"].get<double>(), of_best[0], 1e-12);
  EXPECT_NEAR(s["compute_fraction"]["max"].get<double>(), compute[2], 1e-12);
}

TEST(BenchOfflineTest, PerForwardPhasesDividesTheDifferenceByTheForwardCalls) {
  const std::map<std::string, PhaseTotal> begin = {
      {"forward", {1.0, 10}}, {"head", {0.4, 10}}, {"moe", {0.3, 40}}, {"idle", {0.5, 3}}};
  const std::map<std::string, PhaseTotal> end = {{"forward", {1.8, 14}},
                                                 {"head", {0.8, 14}},
                                                 {"moe", {0.5, 56}},
                                                 {"idle", {0.5, 3}},   // did not run: left out
                                                 {"new", {0.04, 8}}};  // first seen in the window
  const PhaseProfile p = PerForwardPhases(begin, end);
  EXPECT_EQ(p.forwards, 4);
  ASSERT_EQ(p.phases.size(), 4u);
  EXPECT_EQ(p.phases[0].phase, "forward");
  EXPECT_NEAR(p.phases[0].ms, 200.0, 1e-9);
  EXPECT_EQ(p.phases[1].phase, "head");
  EXPECT_NEAR(p.phases[1].ms, 100.0, 1e-9);
  EXPECT_EQ(p.phases[2].phase, "moe");
  EXPECT_NEAR(p.phases[2].ms, 50.0, 1e-9);
  EXPECT_NEAR(p.phases[2].calls, 4.0, 1e-12);
  EXPECT_EQ(p.phases[3].phase, "new");
  EXPECT_NEAR(p.phases[3].ms, 10.0, 1e-9);
  EXPECT_NEAR(p.phases[3].calls, 2.0, 1e-12);
  // No forward call between the readings: nothing to divide by.
  EXPECT_TRUE(PerForwardPhases(end, end).phases.empty());
  EXPECT_EQ(PerForwardPhases(end, end).forwards, 0);
  EXPECT_TRUE(PerForwardPhases({}, {{"head", {1.0, 1}}}).phases.empty());
}

// The decode window's phases per forward call: absent unless DEEPINFER_PROFILE=1; with it, the
// forward phase once per call and every phase at most as long as the forward pass that holds it.
TEST(BenchOfflineTest, DecodePhasesUnderProfiling) {
  const std::string args = "bench --model '" + kModel +
                           "' --batch 1 --prompt-len 16 --decode-len 12 --json --limit-samples 1 "
                           "--kv-budget 64M";
  const auto plain = RunJsonLines(args);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(plain[0]["decode_phases"].is_null());
  EXPECT_EQ(plain[0]["decode_phase_forwards"], 0);
  ASSERT_EQ(setenv("DEEPINFER_PROFILE", "1", 1), 0);
  const auto profiled = RunJsonLines(args);
  unsetenv("DEEPINFER_PROFILE");
  ASSERT_EQ(profiled.size(), 1u);
  const Json& j = profiled[0];
  SCOPED_TRACE(j.dump());
  ASSERT_TRUE(j["decode_phases"].is_array());
  // 12 tokens: the window runs from the first token's delivery to the last's, 11 forward calls
  // at batch 1 (10 when the asynchronous scheduler's second forward call ends before the first
  // token's delivery reads the totals).
  EXPECT_GE(j["decode_phase_forwards"].get<int64_t>(), 10);
  EXPECT_LE(j["decode_phase_forwards"].get<int64_t>(), 11);
  const Json& phases = j["decode_phases"];
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases[0]["phase"], "forward");  // longest first, and every phase nests in it
  EXPECT_EQ(phases[0]["calls_per_forward"].get<double>(), 1.0);
  bool head = false;
  for (size_t i = 1; i < phases.size(); ++i) {
    EXPECT_LE(phases[i]["ms_per_forward"].get<double>(),
              phases[i - 1]["ms_per_forward"].get<double>());
    EXPECT_GT(phases[i]["calls_per_forward"].get<double>(), 0.0);
    if (phases[i]["phase"] == "head") {
      head = true;
      EXPECT_EQ(phases[i]["calls_per_forward"].get<double>(), 1.0);
    }
  }
  EXPECT_TRUE(head);
}

// With --spec dspark the configuration reports its speculation counters; `fixed` verifies every
// draft, so drafts are made and checked, and the acceptance histogram counts every verify call.
TEST(BenchOfflineTest, SpecCountersAreReported) {
  const auto lines = RunJsonLines("bench --model '" + kModel +
                                  "' --batch 2 --prompt-len 16 --decode-len 8 --json "
                                  "--limit-samples 1 --kv-budget 64M --spec dspark "
                                  "--spec-policy fixed --prefix-cache off");
  ASSERT_EQ(lines.size(), 1u);
  const Json& j = lines[0];
  SCOPED_TRACE(j.dump());
  ASSERT_TRUE(j["spec"].is_object());
  const Json& s = j["spec"];
  EXPECT_GT(s["draft_calls"].get<int64_t>(), 0);
  EXPECT_GT(s["drafted"].get<int64_t>(), 0);
  EXPECT_GT(s["verify_calls"].get<int64_t>(), 0);
  EXPECT_GT(s["verified"].get<int64_t>(), 0);
  EXPECT_LE(s["verified"].get<int64_t>(), s["drafted"].get<int64_t>());
  EXPECT_LE(s["accepted"].get<int64_t>(), s["verified"].get<int64_t>());
  int64_t calls = 0, accepted = 0;
  const auto& hist = s["accept_histogram"];
  for (size_t k = 0; k < hist.size(); ++k) {
    calls += hist[k].get<int64_t>();
    accepted += static_cast<int64_t>(k) * hist[k].get<int64_t>();
  }
  EXPECT_EQ(calls, s["verify_calls"].get<int64_t>());
  EXPECT_EQ(accepted, s["accepted"].get<int64_t>());
  EXPECT_NEAR(s["mean_acceptance_length"].get<double>(),
              1.0 + static_cast<double>(accepted) / static_cast<double>(calls), 1e-9);
  EXPECT_NEAR(s["drafted_per_step"].get<double>(),
              s["drafted"].get<double>() / j["steps"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace deepinfer::tools
