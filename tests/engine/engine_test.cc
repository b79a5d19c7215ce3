// Engine scheduling, the KV cache system and request lifecycle on the fake runner (fast).
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "fake_runner.h"

namespace deepinfer::engine {
namespace {

using testing::FakeRunner;

struct RequestSpec {
  std::vector<int32_t> prompt;
  SamplingParams params;
  int priority = 0;
};

struct Result {
  std::vector<int32_t> ids;
  FinishReason finish = FinishReason::kError;
  int64_t prefix_hit = 0;
  int deliveries_after_finish = 0;
};

// Runs `specs` through one engine; checks integrity after every step.
std::vector<Result> RunAll(const std::vector<RequestSpec>& specs, EngineOptions options,
                           int64_t page_tokens = 4, EngineStats* stats = nullptr) {
  FakeRunner runner(/*vocab=*/64, page_tokens);
  options.check_integrity = true;
  auto engine = Engine::Create(&runner, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<Result> results(specs.size());
  std::vector<bool> done(specs.size(), false);
  for (size_t i = 0; i < specs.size(); ++i) {
    Request r;
    r.prompt = specs[i].prompt;
    r.params = specs[i].params;
    r.priority = specs[i].priority;
    r.on_output = [&results, &done, i](const RequestOutput& o) {
      if (done[i]) ++results[i].deliveries_after_finish;
      results[i].ids.insert(results[i].ids.end(), o.new_tokens.begin(), o.new_tokens.end());
      EXPECT_EQ(static_cast<int64_t>(results[i].ids.size()), o.n_output);
      results[i].prefix_hit = o.prefix_hit_tokens;
      if (o.finished) {
        results[i].finish = *o.finished;
        done[i] = true;
      }
    };
    auto id = (*engine)->Add(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  int64_t guard = 0;
  while (!(*engine)->idle() && guard++ < 200000) {
    const Status s = (*engine)->Step();
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) break;
    const KvCacheCounters c = (*engine)->kv().counters();
    EXPECT_LE(c.used + c.cached, c.capacity);
  }
  EXPECT_TRUE((*engine)->idle());
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_TRUE(done[i]) << "request " << i;
  if (stats) *stats = (*engine)->stats();
  // Every page is free or cached once all requests are done.
  EXPECT_EQ((*engine)->kv().counters().used, 0);
  return results;
}

std::vector<RequestSpec> MixedSpecs(int n, uint64_t seed, int shared_prefix = 0) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> prefix(shared_prefix);
  for (int32_t& t : prefix) t = static_cast<int32_t>(2 + rng() % 62);
  std::vector<RequestSpec> specs(n);
  for (int i = 0; i < n; ++i) {
    RequestSpec& s = specs[i];
    s.prompt = prefix;
    const int len = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) s.prompt.push_back(static_cast<int32_t>(2 + rng() % 62));
    s.params.max_tokens = 1 + static_cast<int64_t>(rng() % 24);
    s.params.temperature = (i % 3 == 0) ? 0.0f : 1.0f;
    s.params.seed = 1000 + static_cast<uint64_t>(i);
    s.params.ignore_eos = (i % 2 == 0);
    s.priority = static_cast<int>(rng() % 3);
  }
  return specs;
}

EngineOptions Options(int64_t budget_pages, int64_t max_running, int64_t chunk,
                      bool prefix_cache = true, int64_t page_tokens = 4, bool async = true) {
  EngineOptions o;
  o.async_schedule = async;
  // FakeRunner: page_bytes = page_tokens * 8, sequence_bytes = 64.
  o.kv_budget_bytes = budget_pages * page_tokens * 8 + 64 * max_running;
  o.scheduler.max_running = max_running;
  o.scheduler.prefill_chunk = chunk;
  o.scheduler.max_batch_tokens = 64;
  o.prefix_cache = prefix_cache;
  return o;
}

TEST(EngineTest, HundredsOfMixedRequestsEqualRunningEachAlone) {
  const std::vector<RequestSpec> specs = MixedSpecs(240, 7);
  EngineStats stats;
  const std::vector<Result> batched = RunAll(specs, Options(4096, 32, 7), 4, &stats);
  EXPECT_GT(stats.steps, 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    // Alone, with synchronous scheduling: the batched run had it on.
    const std::vector<Result> alone = RunAll({specs[i]}, Options(4096, 1, 1000, true, 4, false));
    ASSERT_EQ(alone[0].ids, batched[i].ids) << "request " << i;
    EXPECT_EQ(alone[0].finish, batched[i].finish);
    EXPECT_EQ(batched[i].deliveries_after_finish, 0);
    if (specs[i].params.ignore_eos) {
      EXPECT_EQ(static_cast<int64_t>(batched[i].ids.size()), *specs[i].params.max_tokens);
      EXPECT_EQ(batched[i].finish, FinishReason::kLength);
    }
  }
}

TEST(EngineTest, PrefixHitsEqualColdRunsAndAreCounted) {
  const std::vector<RequestSpec> specs = MixedSpecs(60, 11, /*shared_prefix=*/37);
  EngineStats warm_stats, cold_stats;
  const std::vector<Result> warm = RunAll(specs, Options(4096, 4, 16, true), 4, &warm_stats);
  const std::vector<Result> cold = RunAll(specs, Options(4096, 4, 16, false), 4, &cold_stats);
  int hits = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(warm[i].ids, cold[i].ids) << "request " << i;
    if (warm[i].prefix_hit > 0) {
      ++hits;
      EXPECT_EQ(warm[i].prefix_hit % 4, 0);
    }
    EXPECT_EQ(cold[i].prefix_hit, 0);
  }
  EXPECT_GT(hits, 40);  // all but the first few admitted together share the 36-token blocks
  EXPECT_GT(warm_stats.kv.prefix_hits, 0);
  EXPECT_LT(warm_stats.tokens_computed, cold_stats.tokens_computed);
}

TEST(EngineTest, PreemptionUnderATinyBudgetChangesNoOutput) {
  const std::vector<RequestSpec> specs = MixedSpecs(80, 23);
  EngineStats tight_stats;
  // 20 pages of 4 positions: a few long sequences fill the pool and must be preempted.
  const std::vector<Result> tight = RunAll(specs, Options(20, 8, 5), 4, &tight_stats);
  const std::vector<Result> roomy = RunAll(specs, Options(4096, 8, 5));
  EXPECT_GT(tight_stats.preemptions, 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(tight[i].ids, roomy[i].ids) << "request " << i;
    EXPECT_EQ(tight[i].finish, roomy[i].finish);
  }
}

TEST(EngineTest, PoolRespectsTheBudget) {
  FakeRunner runner(64, 4);
  EngineOptions o = Options(100, 8, 8);
  auto engine = Engine::Create(&runner, o);
  ASSERT_TRUE(engine.ok());
  const KvCacheCounters c = (*engine)->kv().counters();
  EXPECT_EQ(c.capacity, 100);
  EXPECT_LE(c.capacity * runner.page_bytes() + 8 * runner.sequence_bytes(), o.kv_budget_bytes);
  o.kv_budget_bytes = 10;
  FakeRunner runner2(64, 4);
  EXPECT_FALSE(Engine::Create(&runner2, o).ok());
}

TEST(EngineTest, CancelFreesEveryPage) {
  FakeRunner runner(64, 4);
  auto engine = Engine::Create(&runner, Options(512, 8, 8, /*prefix_cache=*/false));
  ASSERT_TRUE(engine.ok());
  std::vector<std::shared_ptr<std::atomic<bool>>> flags;
  std::map<int, FinishReason> finish;
  for (int i = 0; i < 6; ++i) {
    Request r;
    r.prompt.assign(30 + i, 5);
    r.params.ignore_eos = true;
    r.params.max_tokens = 1000;
    r.on_output = [&finish, i](const RequestOutput& o) {
      if (o.finished) finish[i] = *o.finished;
    };
    flags.push_back(r.cancelled);
    ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
  }
  for (int s = 0; s < 12; ++s) ASSERT_TRUE((*engine)->Step().ok());
  EXPECT_GT((*engine)->kv().counters().used, 0);
  for (auto& f : flags) f->store(true);
  ASSERT_TRUE((*engine)->Step().ok());
  EXPECT_TRUE((*engine)->idle());
  EXPECT_EQ((*engine)->kv().counters().used, 0);
  EXPECT_EQ((*engine)->kv().counters().free, (*engine)->kv().capacity());
  ASSERT_EQ(finish.size(), 6u);
  for (auto& [i, f] : finish) EXPECT_EQ(f, FinishReason::kAbort);
  EXPECT_TRUE((*engine)->CheckIntegrity().ok());
}

TEST(EngineTest, PrioritiesRunFirstAndStopConditionsHold) {
  FakeRunner runner(64, 4);
  EngineOptions o = Options(4096, 1, 64);
  auto engine = Engine::Create(&runner, o);
  ASSERT_TRUE(engine.ok());
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    Request r;
    r.prompt = {3, 4, 5};
    r.params.max_tokens = 3;
    r.params.ignore_eos = true;
    r.priority = 2 - i;  // the last added has the highest priority
    r.on_output = [&order, i](const RequestOutput& o) {
      if (o.finished) order.push_back(i);
    };
    ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
  }
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));

  // A stop-string check and stop token ids end the output at the matching token.
  std::vector<int32_t> out;
  Request r;
  r.prompt = {9, 9, 9};
  r.params.max_tokens = 50;
  r.params.ignore_eos = true;
  r.stop_check = [](std::span<const int32_t> o) { return o.size() == 4; };
  r.on_output = [&out](const RequestOutput& o) {
    out.insert(out.end(), o.new_tokens.begin(), o.new_tokens.end());
  };
  ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  EXPECT_EQ(out.size(), 4u);  // with async scheduling the check runs a step late: same output
  EXPECT_EQ((*engine)->kv().counters().used, 0);
}

TEST(EngineTest, BadRequestsAreRejectedAndDisturbNothing) {
  FakeRunner runner(64, 4, /*max_positions=*/100);
  auto engine = Engine::Create(&runner, Options(64, 4, 8));
  ASSERT_TRUE(engine.ok());
  Request empty;
  EXPECT_FALSE((*engine)->Add(std::move(empty)).ok());
  Request bad_id;
  bad_id.prompt = {3, 64};
  EXPECT_FALSE((*engine)->Add(std::move(bad_id)).ok());
  Request too_long;
  too_long.prompt.assign(100, 3);
  EXPECT_FALSE((*engine)->Add(std::move(too_long)).ok());
  Request too_many;
  too_many.prompt.assign(10, 3);
  too_many.params.max_tokens = 95;
  EXPECT_FALSE((*engine)->Add(std::move(too_many)).ok());
  Request bigger_than_pool;
  bigger_than_pool.prompt.assign(90, 3);
  FakeRunner small_runner(64, 4, 1000);
  auto small = Engine::Create(&small_runner, Options(8, 1, 8));
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE((*small)->Add(std::move(bigger_than_pool)).ok());
  Request bad_params;
  bad_params.prompt = {3};
  bad_params.params.top_p = 2.0f;
  EXPECT_FALSE((*engine)->Add(std::move(bad_params)).ok());
  EXPECT_TRUE((*engine)->idle());
  Request fine;
  fine.prompt = {3, 4};
  fine.params.max_tokens = 2;
  EXPECT_TRUE((*engine)->Add(std::move(fine)).ok());
  EXPECT_TRUE((*engine)->RunUntilIdle().ok());
}

TEST(KvCacheManagerTest, RefCountsLruAndIntegrity) {
  KvCacheManager kv(4, 2, true);
  const int32_t a = kv.Allocate(), b = kv.Allocate();
  const BlockKey ka = ChainBlockKey(std::nullopt, std::vector<int32_t>{1, 2});
  const BlockKey kb = ChainBlockKey(ka, std::vector<int32_t>{3, 4});
  EXPECT_FALSE(ka == ChainBlockKey(std::nullopt, std::vector<int32_t>{1, 3}));
  kv.Register(a, ka);
  kv.Register(b, kb);
  kv.Release(a);
  kv.Release(b);
  EXPECT_EQ(kv.counters().cached, 2);
  const std::vector<BlockKey> keys = {ka, kb};
  EXPECT_EQ(kv.Peek(keys), 2);
  std::vector<int32_t> got = kv.Match(keys);
  EXPECT_EQ(got, (std::vector<int32_t>{a, b}));
  EXPECT_EQ(kv.ref_count(a), 1);
  EXPECT_TRUE(kv.CheckIntegrity().ok());
  kv.Release(a);
  kv.Release(b);
  // Exhaust the pool: the free pages go first, then the least recently released cached page.
  std::vector<int32_t> taken;
  for (int i = 0; i < 3; ++i) taken.push_back(kv.Allocate());
  EXPECT_EQ(kv.counters().evictions, 1);
  EXPECT_EQ(kv.Peek(keys), 0);  // block a was evicted first: the chain is broken
  EXPECT_TRUE(kv.CheckIntegrity().ok());
  taken.push_back(kv.Allocate());
  EXPECT_EQ(kv.Allocate(), -1);
  std::vector<int32_t> refs(4, 1);
  EXPECT_TRUE(kv.CheckIntegrity(&refs).ok());
  refs[0] = 2;
  EXPECT_FALSE(kv.CheckIntegrity(&refs).ok());
  for (int32_t p : taken) kv.Release(p);
  EXPECT_EQ(kv.counters().free, 4);
}

}  // namespace
}  // namespace deepinfer::engine
