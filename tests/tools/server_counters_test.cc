// bench-serve's reading of a deepinfer server's /metrics: the engine-time and CPU counters the
// server renders parse back to the same values, and the overhead fractions are their ratios.
#include "tools/server_counters.h"

#include <gtest/gtest.h>

#include <string>

#include "server/metrics.h"

namespace deepinfer::tools {
namespace {

server::EngineSnapshot Snapshot(double step_s, double forward_s, double spec_s) {
  server::EngineSnapshot s;
  s.stats.step_seconds = step_s;
  s.stats.forward_seconds = forward_s;
  s.stats.spec_seconds = spec_s;
  return s;
}

TEST(ServerCountersTest, RenderedMetricsParseBack) {
  server::Metrics m;
  const std::string text = m.Render(Snapshot(12.5, 11.25, 0.5), server::CpuTimes{30.75, 0.125});
  const auto c = ParseServerCounters(text);
  ASSERT_TRUE(c.has_value()) << text;
  EXPECT_EQ(c->step_s, 12.5);
  EXPECT_EQ(c->forward_s, 11.25);
  EXPECT_EQ(c->spec_s, 0.5);
  EXPECT_EQ(c->process_cpu_s, 30.75);
  EXPECT_EQ(c->http_cpu_s, 0.125);
}

TEST(ServerCountersTest, MissingSeriesGiveNothing) {
  EXPECT_FALSE(ParseServerCounters("").has_value());
  // A server without the engine-time series (not deepinfer): no server section.
  EXPECT_FALSE(ParseServerCounters("process_cpu_seconds_total 3\n").has_value());
  // A name that only starts like one of ours does not count.
  EXPECT_FALSE(ParseServerCounters("deepinfer_engine_step_seconds_total_x 1\n"
                                   "deepinfer_engine_forward_seconds_total 1\n"
                                   "deepinfer_engine_spec_seconds_total 0\n"
                                   "deepinfer_http_thread_cpu_seconds_total 0\n"
                                   "process_cpu_seconds_total 1\n")
                   .has_value());
}

TEST(ServerCountersTest, OverheadIsTheRatioOfTheDeltas) {
  const ServerCounters before{10, 9, 0, 1, 40};
  const ServerCounters after{20, 18, 0.5, 1.2, 60};
  const auto j = ServerOverheadJson(before, after, 12.0);
  EXPECT_DOUBLE_EQ(j["engine_step_s"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["forward_s"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(j["scheduling_fraction"].get<double>(), 0.05);  // (10 - 9 - 0.5) / 10
  EXPECT_NEAR(j["http_cpu_fraction"].get<double>(), 0.01, 1e-12);  // 0.2 / 20
  EXPECT_NEAR(j["overhead_fraction"].get<double>(), 0.06, 1e-12);
  EXPECT_DOUBLE_EQ(j["forward_busy_fraction"].get<double>(), 0.75);  // 9 / 12
  // No step time (nothing ran): zero fractions, not a division by zero.
  const auto idle = ServerOverheadJson(before, before, 0.0);
  EXPECT_EQ(idle["scheduling_fraction"].get<double>(), 0.0);
  EXPECT_EQ(idle["forward_busy_fraction"].get<double>(), 0.0);
}

}  // namespace
}  // namespace deepinfer::tools
