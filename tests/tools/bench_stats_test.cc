// The benchmark statistics (tools/bench_stats.h) against hand-computed values.
#include "tools/bench_stats.h"

#include <gtest/gtest.h>

namespace deepinfer::tools {
namespace {

constexpr double kTol = 1e-12;

TEST(BenchStatsTest, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {5, 1, 4, 2, 3};  // unsorted on purpose
  EXPECT_NEAR(Percentile(v, 0), 1.0, kTol);
  EXPECT_NEAR(Percentile(v, 50), 3.0, kTol);
  EXPECT_NEAR(Percentile(v, 90), 4.6, kTol);   // rank 0.9 * 4 = 3.6 -> 4 + 0.6 * (5 - 4)
  EXPECT_NEAR(Percentile(v, 99), 4.96, kTol);  // rank 3.96
  EXPECT_NEAR(Percentile(v, 100), 5.0, kTol);
  EXPECT_NEAR(Percentile({7.5}, 99), 7.5, kTol);
  EXPECT_NEAR(Percentile({}, 50), 0.0, kTol);
  EXPECT_NEAR(Percentile({10, 20}, 25), 12.5, kTol);  // rank 0.25
}

TEST(BenchStatsTest, TpotExcludesTheFirstToken) {
  RequestTiming r;
  r.ok = true;
  r.ttft_s = 0.1;
  r.e2e_s = 1.0;
  r.output_tokens = 10;
  ASSERT_TRUE(Tpot(r).has_value());
  EXPECT_NEAR(*Tpot(r), 0.1, kTol);  // 0.9 s over 9 tokens
  r.output_tokens = 1;
  EXPECT_FALSE(Tpot(r).has_value());
}

RequestTiming Req(bool ok, double ttft, double e2e, int64_t prompt, int64_t out,
                  std::vector<double> itl = {}) {
  RequestTiming r;
  r.ok = ok;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.prompt_tokens = prompt;
  r.output_tokens = out;
  r.itl_s = std::move(itl);
  return r;
}

TEST(BenchStatsTest, SummaryGoodputAndCost) {
  const std::vector<RequestTiming> reqs = {
      Req(true, 0.1, 1.0, 5, 10, {0.05, 0.15}),  // TPOT 0.1: within both bounds
      Req(true, 0.5, 2.5, 5, 5, {0.4}),          // TTFT 0.5 > 0.3: misses
      Req(true, 0.2, 0.2, 5, 1),                 // one token, no TPOT: within
      Req(false, 0, 3.0, 5, 0),                  // failed: not counted
  };
  Slo slo;
  slo.ttft_s = 0.3;
  slo.tpot_s = 0.2;
  const RunSummary s = Summarize(reqs, 10.0, slo, 3.6);
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.input_tokens, 15);
  EXPECT_EQ(s.output_tokens, 16);
  EXPECT_EQ(s.good_requests, 2);
  EXPECT_NEAR(s.request_throughput, 0.3, kTol);
  EXPECT_NEAR(s.output_throughput, 1.6, kTol);
  EXPECT_NEAR(s.total_token_throughput, 3.1, kTol);
  EXPECT_NEAR(s.request_goodput, 0.2, kTol);
  EXPECT_NEAR(s.output_goodput, 1.1, kTol);  // 10 + 1 tokens of good requests over 10 s
  // 3.6 $/h for 10 s = $0.01, over 16 and 11 output tokens.
  ASSERT_TRUE(s.cost_per_million_tokens.has_value());
  EXPECT_NEAR(*s.cost_per_million_tokens, 0.01 / 16e-6, 1e-9);
  ASSERT_TRUE(s.cost_per_million_good_tokens.has_value());
  EXPECT_NEAR(*s.cost_per_million_good_tokens, 0.01 / 11e-6, 1e-9);
  // TTFT {0.1, 0.5, 0.2}: p50 0.2, p90 at rank 1.8 = 0.2 + 0.8 * 0.3.
  EXPECT_EQ(s.ttft_s.count, 3);
  EXPECT_NEAR(s.ttft_s.p50, 0.2, kTol);
  EXPECT_NEAR(s.ttft_s.p90, 0.44, kTol);
  EXPECT_NEAR(s.ttft_s.mean, 0.8 / 3, kTol);
  // TPOT {0.1, 0.5} (the one-token request has none).
  EXPECT_EQ(s.tpot_s.count, 2);
  EXPECT_NEAR(s.tpot_s.p50, 0.3, kTol);
  // ITL pooled over requests {0.05, 0.15, 0.4}.
  EXPECT_EQ(s.itl_s.count, 3);
  EXPECT_NEAR(s.itl_s.p50, 0.15, kTol);
  EXPECT_NEAR(s.e2e_s.max, 2.5, kTol);
  // No price: no cost.
  EXPECT_FALSE(Summarize(reqs, 10.0, slo, std::nullopt).cost_per_million_tokens.has_value());
  // No SLO: every completed request is good.
  EXPECT_EQ(Summarize(reqs, 10.0, Slo{}, std::nullopt).good_requests, 3);
}

TEST(BenchStatsTest, BestUnderSloPicksTheFastestRunWithinTheP90Bounds) {
  RunSummary slow, mid, fast;
  slow.completed = mid.completed = fast.completed = 10;
  slow.output_throughput = 10;
  slow.ttft_s.p90 = 0.1;
  slow.tpot_s = {.p90 = 0.01, .count = 10};
  mid.output_throughput = 20;
  mid.ttft_s.p90 = 0.2;
  mid.tpot_s = {.p90 = 0.02, .count = 10};
  fast.output_throughput = 40;
  fast.ttft_s.p90 = 0.9;  // beyond a 0.5 s TTFT bound
  fast.tpot_s = {.p90 = 0.03, .count = 10};
  Slo slo;
  slo.ttft_s = 0.5;
  EXPECT_EQ(BestUnderSlo({slow, fast, mid}, slo), std::optional<size_t>(2));
  slo.tpot_s = 0.015;
  EXPECT_EQ(BestUnderSlo({slow, fast, mid}, slo), std::optional<size_t>(0));
  slo.tpot_s = 0.001;
  EXPECT_FALSE(BestUnderSlo({slow, fast, mid}, slo).has_value());
  EXPECT_EQ(BestUnderSlo({slow, fast, mid}, Slo{}), std::optional<size_t>(1));
}

TEST(BenchStatsTest, DistributionJsonScalesEveryStatisticButTheCount) {
  const Distribution d = Summarize({0.002, 0.001, 0.003});
  const nlohmann::ordered_json j = DistributionJson(d, 1e3);
  EXPECT_EQ(j["count"], 3);
  EXPECT_NEAR(j["p50"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(j["mean"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(j["min"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(j["max"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(j["p90"].get<double>(), 2.8, 1e-9);  // rank 1.8
  EXPECT_NEAR(DistributionJson(d)["p99"].get<double>(), 0.00298, 1e-12);
}

}  // namespace
}  // namespace deepinfer::tools
