// The distribution `deepinfer bench --runs N` reports (tools/bench_runs.h), against hand-computed
// values (the command's --runs output as a process: bench_offline_test.cc).
#include "tools/bench_runs.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace deepinfer::tools {
namespace {

constexpr double kEps = 1e-12;

OfflineResult MakeRun(double prefill_gflops, double peak, std::optional<double> gbs, double best,
                      std::optional<double> step_ms, std::optional<double> bound_ms) {
  OfflineResult r;
  r.config = {1, 4, 64};
  r.prefill_gflops = prefill_gflops;
  r.measured_peak_gflops = peak;
  r.decode_gbs = gbs;
  r.bandwidth_max_gbs = best;
  r.decode_step_ms = step_ms;
  r.decode_bound_step_ms = bound_ms;
  return r;
}

TEST(BenchRunsTest, MediansAndRangesOfTheRatios) {
  const std::vector<OfflineResult> runs = {
      MakeRun(90, 100, 27.0, 30.0, 80.0, 72.0),  // 90% of peak, 90% of the best read, bound 90%
      MakeRun(80, 100, 33.0, 40.0, 75.0, 60.0),  // 80%, 82.5%, 80%
      MakeRun(85, 100, 19.0, 20.0, 90.0, 85.5),  // 85%, 95%, 95%
  };
  const RunsSummary s = SummarizeRuns(runs);
  EXPECT_EQ(s.runs, 3);
  EXPECT_EQ(s.config.decode_len, 64);
  EXPECT_NEAR(s.compute_fraction.p50, 0.85, kEps);
  EXPECT_NEAR(s.compute_fraction.min, 0.80, kEps);
  EXPECT_NEAR(s.compute_fraction.max, 0.90, kEps);
  EXPECT_NEAR(s.bandwidth_fraction_of_best.p50, 0.90, kEps);
  EXPECT_NEAR(s.bandwidth_fraction_of_best.min, 0.825, kEps);
  EXPECT_NEAR(s.bandwidth_fraction_of_best.max, 0.95, kEps);
  EXPECT_NEAR(s.decode_bound_fraction.p50, 0.90, kEps);
  EXPECT_NEAR(s.decode_step_ms.p50, 80.0, kEps);
  EXPECT_NEAR(s.best_read_gbs.p50, 30.0, kEps);
  EXPECT_NEAR(s.best_read_gbs.mean, 30.0, kEps);
  const nlohmann::ordered_json j = s.ToJson();
  EXPECT_EQ(j["mode"], "runs");
  EXPECT_EQ(j["runs"], 3);
  EXPECT_NEAR(j["bandwidth_fraction_of_best"]["p50"].get<double>(), 0.90, kEps);
  EXPECT_NEAR(j["compute_fraction"]["min"].get<double>(), 0.80, kEps);
  EXPECT_EQ(j["decode_step_ms"]["count"], 3);
}

TEST(BenchRunsTest, RunsWithoutADecodeWindowCountOnlyForPrefill) {
  const std::vector<OfflineResult> runs = {
      MakeRun(50, 100, std::nullopt, 30.0, std::nullopt, std::nullopt),
      MakeRun(70, 100, 27.0, 30.0, 80.0, 72.0),
  };
  const RunsSummary s = SummarizeRuns(runs);
  EXPECT_EQ(s.compute_fraction.count, 2);
  EXPECT_NEAR(s.compute_fraction.p50, 0.60, kEps);
  EXPECT_EQ(s.bandwidth_fraction_of_best.count, 1);
  EXPECT_NEAR(s.bandwidth_fraction_of_best.p50, 0.90, kEps);
  EXPECT_EQ(s.decode_step_ms.count, 1);
  EXPECT_EQ(SummarizeRuns({}).runs, 0);
  EXPECT_EQ(SummarizeRuns({}).ToJson()["decode_step_ms"]["count"], 0);
}

}  // namespace
}  // namespace deepinfer::tools
