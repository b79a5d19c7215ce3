// The routing policies over plain candidates (no HTTP, no workers): round-robin, power of two
// choices, cache-aware with its balance thresholds.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "dist/cache_aware.h"
#include "dist/policy.h"
#include "dist/power_of_two.h"
#include "dist/round_robin.h"

namespace deepinfer::dist {
namespace {

Candidate Load(int64_t in_flight, int64_t cached = 0, int64_t blocks = 0) {
  Candidate c;
  c.in_flight_tokens = in_flight;
  c.cached_tokens = cached;
  c.cache_blocks = blocks;
  return c;
}

TEST(RoundRobin, TakesTurns) {
  RoundRobin rr;
  const std::vector<Candidate> three(3);
  std::vector<size_t> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(rr.Pick(three, 0));
  EXPECT_EQ(picks, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
  const std::vector<Candidate> one(1);
  EXPECT_EQ(rr.Pick(one, 0), 0u);
}

TEST(PowerOfTwo, PicksTheLessLoadedOfTwoDistinctDraws) {
  PowerOfTwo p2c(7);
  // Two candidates: always both drawn, so always the lighter one.
  const std::vector<Candidate> two = {Load(500), Load(100)};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(p2c.Pick(two, 0), 1u);
  // The heaviest of three is never picked (it loses against whichever other is drawn); the
  // lightest wins whenever drawn, i.e. in about 2/3 of the picks.
  const std::vector<Candidate> three = {Load(10), Load(1000), Load(20)};
  std::map<size_t, int> count;
  for (int i = 0; i < 3000; ++i) ++count[p2c.Pick(three, 0)];
  EXPECT_EQ(count[1], 0);
  EXPECT_NEAR(count[0], 2000, 150);
  EXPECT_NEAR(count[2], 1000, 150);
  const std::vector<Candidate> one = {Load(5)};
  EXPECT_EQ(p2c.Pick(one, 0), 0u);
}

TEST(PowerOfTwo, SameSeedSamePicks) {
  PowerOfTwo a(3), b(3);
  const std::vector<Candidate> four = {Load(1), Load(1), Load(1), Load(1)};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.Pick(four, 0), b.Pick(four, 0));
}

TEST(CacheAware, AHolderOfEnoughOfThePromptGetsIt) {
  CacheAware ca(PolicyOptions{});
  // Worker 1 holds 768 of 1000 tokens (>= half): it gets the request despite its queue.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(100, 0), Load(900, 768)}, 1000), 1u);
  // The most complete holder wins among holders.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(0, 512), Load(0, 896), Load(0, 0)}, 1000), 1u);
  // Below the threshold (448 of 1000) the least work decides: 0 + 1000 < 900 + 552.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(0, 0), Load(900, 448)}, 1000), 0u);
}

TEST(CacheAware, PicksTheLeastWork) {
  PolicyOptions no_affinity;
  no_affinity.cache_threshold = 1.01;  // only the cost decides
  CacheAware ca(no_affinity);
  // 1000-token prompt; worker 1 holds 768 of it: cost 0 + 232 vs 0 + 1000.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(0, 0), Load(0, 768)}, 1000), 1u);
  // ... unless its queue outweighs recomputing the prefix elsewhere: 900 + 232 > 100 + 1000.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(100, 0), Load(900, 768)}, 1000), 0u);
  // A worker that holds the whole prompt costs only its queue.
  EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(50, 0), Load(60, 2000)}, 1000), 1u);
}

TEST(CacheAware, TiesGoToTheEmptierCacheThenTakeTurns) {
  CacheAware ca(PolicyOptions{});
  // Equal cost: the worker with fewer listed keys gets a new prefix.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ca.Pick(std::vector<Candidate>{Load(0, 0, 90), Load(0, 0, 10)}, 30), 1u);
  }
  // Exact ties take turns.
  std::map<size_t, int> count;
  for (int i = 0; i < 6; ++i) ++count[ca.Pick(std::vector<Candidate>(3), 30)];
  EXPECT_EQ(count[0], 2);
  EXPECT_EQ(count[1], 2);
  EXPECT_EQ(count[2], 2);
}

TEST(CacheAware, UnevenLoadGoesToTheLeastLoaded) {
  PolicyOptions o;
  o.balance_abs_tokens = 1000;
  o.balance_rel = 1.5;
  CacheAware ca(o);
  // max - min = 4000 > 1000 and 5000 > 1.5 x 1000: uneven, so the cache does not matter.
  const std::vector<Candidate> uneven = {Load(5000, 100000), Load(1000, 0)};
  EXPECT_TRUE(ca.Unbalanced(uneven));
  EXPECT_EQ(ca.Pick(uneven, 100000), 1u);
  // Spread above abs but not above rel: 20000 vs 15000 (20000 < 1.5 x 15000).
  const std::vector<Candidate> rel_ok = {Load(20000, 100000), Load(15000, 0)};
  EXPECT_FALSE(ca.Unbalanced(rel_ok));
  EXPECT_EQ(ca.Pick(rel_ok, 100000), 0u);
  // Above rel but not above abs: 900 vs 0.
  const std::vector<Candidate> abs_ok = {Load(900, 1000), Load(0, 0)};
  EXPECT_FALSE(ca.Unbalanced(abs_ok));
  EXPECT_EQ(ca.Pick(abs_ok, 1000), 0u);
}

TEST(Policy, NamesAndFactory) {
  for (const PolicyKind k :
       {PolicyKind::kCacheAware, PolicyKind::kPowerOfTwo, PolicyKind::kRoundRobin}) {
    EXPECT_EQ(ParsePolicyKind(PolicyName(k)), k);
    EXPECT_NE(MakePolicy(k, {}), nullptr);
  }
  EXPECT_FALSE(ParsePolicyKind("random").has_value());
  EXPECT_TRUE(MakePolicy(PolicyKind::kCacheAware, {})->uses_cache());
  EXPECT_FALSE(MakePolicy(PolicyKind::kPowerOfTwo, {})->uses_cache());
}

}  // namespace
}  // namespace deepinfer::dist
