// The judge's metrics against hand-computed values.
#include "golden_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace deepinfer::model::test {
namespace {

TEST(GoldenMetrics, ArgmaxTakesTheLowerIndexOnTiesAndMarginIsTop2Gap) {
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, -2.0f};
  EXPECT_EQ(Argmax(row), 1);
  EXPECT_EQ(Top2Margin(row), 0.0);
  const std::vector<float> row2 = {0.5f, 2.0f, 1.25f};
  EXPECT_EQ(Argmax(row2), 1);
  EXPECT_DOUBLE_EQ(Top2Margin(row2), 0.75);
  EXPECT_EQ(Argmax(std::vector<float>{}), -1);
}

TEST(GoldenMetrics, RowRelRmsAndKl) {
  const std::vector<float> g = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(RowRelRms(g, std::vector<float>{3.0f, 4.5f}), 0.5 / 5.0);
  EXPECT_EQ(RowRelRms(g, g), 0.0);
  EXPECT_EQ(RowRelRms(std::vector<float>{0, 0}, std::vector<float>{0, 0}), 0.0);
  EXPECT_TRUE(std::isinf(RowRelRms(std::vector<float>{0, 0}, std::vector<float>{0, 1})));
  // p_g = (1/2, 1/2), p_e = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
  EXPECT_NEAR(RowKl(std::vector<float>{0, 0}, std::vector<float>{0, std::log(3.0f)}),
              0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_EQ(RowKl(g, g), 0.0);
  // Shifting all logits leaves the distribution unchanged.
  EXPECT_NEAR(RowKl(g, std::vector<float>{13.0f, 14.0f}), 0.0, 1e-12);
}

TEST(GoldenMetrics, ComputeDiffAndLogitStats) {
  // Two rows of 2: row 0 exact, row 1 = (3, 4) vs (3, 5): rel-RMS 1/5.
  const std::vector<float> g = {1, 2, 3, 4};
  const std::vector<float> e = {1, 2, 3, 5};
  const DiffStats d = ComputeDiff(g, e, 2);
  EXPECT_EQ(d.rows, 2);
  EXPECT_DOUBLE_EQ(d.rel_rms_row_max, 0.2);
  EXPECT_EQ(d.worst_row, 1);
  EXPECT_DOUBLE_EQ(d.rel_rms_row_mean, 0.1);
  EXPECT_DOUBLE_EQ(d.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(d.mean_abs, 0.25);
  const LogitStats s = ComputeLogitStats(g, std::vector<float>{2, 1, 3, 5}, 2);
  EXPECT_DOUBLE_EQ(s.argmax_agree_frac, 0.5);
  EXPECT_GT(s.kl_row_max, 0.0);
  EXPECT_DOUBLE_EQ(s.kl_row_mean * 2,
                   s.kl_row_max + RowKl(std::vector<float>{3, 4}, std::vector<float>{3, 5}));
}

TEST(GoldenMetrics, NanNeverPasses) {
  const std::vector<float> g = {1, 2, 3, 4};
  const std::vector<float> e = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
  const LogitStats s = ComputeLogitStats(g, e, 2);
  EXPECT_TRUE(std::isnan(s.diff.rel_rms_row_max));
  EXPECT_TRUE(std::isnan(s.diff.rel_rms_row_mean));
  EXPECT_TRUE(std::isnan(s.diff.max_abs));
  EXPECT_TRUE(std::isnan(s.kl_row_max));
  EXPECT_FALSE(MakeCheck("x", s.diff.max_abs, 1e9, Relation::kLessEqual).pass);
  EXPECT_FALSE(MakeCheck("x", s.diff.max_abs, 0, Relation::kGreaterEqual).pass);
}

TEST(GoldenMetrics, MarginRuleCountsOnlyConfidentRows) {
  // Row 0: margin 2, argmax differs -> violation. Row 1: margin 0.1 -> not covered.
  const std::vector<float> g = {3, 1, 0, 1.1f, 1.0f, 0};
  const std::vector<float> e = {0, 1, 3, 1.0f, 1.1f, 0};
  const MarginRule m = CheckArgmaxMargin(g, e, 3, 0.5);
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.covered, 1);
  EXPECT_EQ(m.violations, 1);
  EXPECT_EQ(m.first_violation, 0);
  EXPECT_EQ(CheckArgmaxMargin(g, e, 3, 2.5).covered, 0);
}

TEST(GoldenMetrics, FractionEqualAndReport) {
  EXPECT_DOUBLE_EQ(
      FractionEqual(std::vector<int64_t>{1, 2, 3, 4}, std::vector<int64_t>{1, 0, 3, 0}), 0.5);
  std::vector<MetricCheck> checks = {
      MakeCheck("a rel_rms_row_mean", 0.00125, 0.0013, Relation::kLessEqual, "47 rows"),
      MakeCheck("b frac", 0.4, 0.45, Relation::kGreaterEqual),
      SkippedCheck("c", "optional tensor absent")};
  EXPECT_TRUE(checks[0].pass);
  EXPECT_FALSE(checks[1].pass);
  EXPECT_FALSE(AllPassed(checks));
  const std::string report = FormatReport(checks);
  EXPECT_NE(report.find("0.00125 <= 0.0013"), std::string::npos) << report;
  EXPECT_NE(report.find("FAIL  b frac"), std::string::npos) << report;
  EXPECT_NE(report.find("0.4 >= 0.45"), std::string::npos) << report;
  EXPECT_NE(report.find("SKIP  c"), std::string::npos) << report;
  EXPECT_NE(report.find("3 checks: 1 passed, 1 failed, 1 skipped"), std::string::npos) << report;
}

}  // namespace
}  // namespace deepinfer::model::test
