#include "dist/eplb_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "dist/expert_placement.h"

namespace deepinfer::dist {
namespace {

// Checks the shape of a plan: every expert held, no rank holding one expert twice, every rank at
// most ceil((E + R) / N) experts, E + R copies in all.
void ExpectValidPlan(const std::vector<std::vector<int>>& holders, int64_t n_exp, int n_ranks,
                     int redundant) {
  ASSERT_EQ(static_cast<int64_t>(holders.size()), n_exp);
  std::vector<int64_t> per_rank(static_cast<size_t>(n_ranks), 0);
  int64_t copies = 0;
  for (const std::vector<int>& h : holders) {
    ASSERT_FALSE(h.empty());
    EXPECT_EQ(std::set<int>(h.begin(), h.end()).size(), h.size()) << "a rank holds an expert twice";
    EXPECT_TRUE(std::is_sorted(h.begin(), h.end()));
    for (int r : h) {
      ASSERT_GE(r, 0);
      ASSERT_LT(r, n_ranks);
      ++per_rank[static_cast<size_t>(r)];
    }
    copies += static_cast<int64_t>(h.size());
  }
  EXPECT_EQ(copies, n_exp + redundant);
  const int64_t slots = (n_exp + redundant + n_ranks - 1) / n_ranks;
  for (int64_t n : per_rank) EXPECT_LE(n, slots);
}

TEST(EplbPlanner, UniformLoadNeedsNoReplicasAndIsBalanced) {
  const std::vector<int64_t> loads(16, 100);
  auto plan = PlanExpertLayer(loads, 4, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ExpectValidPlan(*plan, 16, 4, 0);
  EXPECT_DOUBLE_EQ(PlacementImbalance(loads, *plan, 4), 0.0);
}

TEST(EplbPlanner, HotExpertGetsTheRedundantCopies) {
  // Expert 3 takes as many rows as all others together.
  std::vector<int64_t> loads(16, 10);
  loads[3] = 150;
  auto plan = PlanExpertLayer(loads, 4, 4);
  ASSERT_TRUE(plan.ok());
  ExpectValidPlan(*plan, 16, 4, 4);
  EXPECT_EQ((*plan)[3].size(), 4u) << "the hot expert on every rank";
  const ExpertPlacement blocked = ExpertPlacement::Blocked(std::vector<int64_t>{16}, 4);
  std::vector<std::vector<int>> before(16);
  for (int64_t x = 0; x < 16; ++x) before[static_cast<size_t>(x)] = blocked.holders(0, x);
  const double was = PlacementImbalance(loads, before, 4);
  const double now = PlacementImbalance(loads, *plan, 4);
  EXPECT_GT(was, 1.0);
  EXPECT_LE(now, 0.15);
}

TEST(EplbPlanner, RandomSkewedLoadsGiveValidPlansThatNeverLoseToBlocked) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n_ranks = 1 + static_cast<int>(rng() % 8);
    const int64_t n_exp = n_ranks + static_cast<int64_t>(rng() % 40);
    const int redundant = static_cast<int>(rng() % static_cast<uint64_t>(n_ranks));
    std::vector<int64_t> loads(static_cast<size_t>(n_exp));
    std::lognormal_distribution<double> skew(0.0, 1.5);
    for (int64_t& l : loads) l = static_cast<int64_t>(skew(rng) * 100);
    auto plan = PlanExpertLayer(loads, n_ranks, redundant);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString() << " trial " << trial;
    ExpectValidPlan(*plan, n_exp, n_ranks, redundant);
    const ExpertPlacement blocked = ExpertPlacement::Blocked(std::vector<int64_t>{n_exp}, n_ranks);
    std::vector<std::vector<int>> before(static_cast<size_t>(n_exp));
    for (int64_t x = 0; x < n_exp; ++x) before[static_cast<size_t>(x)] = blocked.holders(0, x);
    EXPECT_LE(PlacementImbalance(loads, *plan, n_ranks),
              PlacementImbalance(loads, before, n_ranks) + 1e-9)
        << "trial " << trial;
  }
}

TEST(EplbPlanner, RejectsImpossibleRequests) {
  const std::vector<int64_t> loads(4, 1);
  EXPECT_FALSE(PlanExpertLayer(loads, 2, 5).ok()) << "more copies than ranks per expert";
  EXPECT_FALSE(PlanExpertLayer(loads, 0, 0).ok());
  EXPECT_FALSE(PlanExpertLayer({}, 2, 0).ok());
}

TEST(ExpertPlacement, BlockedSpreadsContiguousRangesAndTargetsPreferHome) {
  const ExpertPlacement p = ExpertPlacement::Blocked(std::vector<int64_t>{8, 6}, 4);
  EXPECT_EQ(p.holders(0, 0), std::vector<int>{0});
  EXPECT_EQ(p.holders(0, 7), std::vector<int>{3});
  EXPECT_EQ(p.HeldBy(1, 0), (std::vector<uint8_t>{1, 1, 0, 0, 0, 0}));
  ExpertPlacement q = p;
  q.SetLayer(0, {{0, 2}, {0}, {1}, {1}, {2}, {2}, {3}, {3}});
  EXPECT_EQ(q.Target(0, 0, 2, 5), 2) << "a home copy is used";
  const int t = q.Target(0, 0, 1, 5);
  EXPECT_TRUE(t == 0 || t == 2);
  EXPECT_EQ(q.Target(0, 0, 1, 5), t) << "deterministic";
}

}  // namespace
}  // namespace deepinfer::dist
