// WorkerPool over workers with no HTTP behind them: which worker a request goes to, what
// Dispatch records, and when cache-aware falls back.
#include "router/worker_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

namespace deepinfer::router {
namespace {

struct Fixture {
  std::vector<std::unique_ptr<Worker>> owned;
  std::vector<Worker*> workers;

  explicit Fixture(int n, int64_t page_tokens = 8) {
    for (int i = 0; i < n; ++i) {
      owned.push_back(
          std::make_unique<Worker>(*ParseWorkerUrl("127.0.0.1:" + std::to_string(9000 + i)), 1000));
      Worker* w = owned.back().get();
      w->RecordProbe(true);
      WorkerInfo info;
      info.model = "m";
      info.fingerprint = "f";
      info.page_tokens = page_tokens;
      w->SetInfo(info);
      workers.push_back(w);
    }
  }
};

RequestFacts Prompt(int n_tokens, int32_t first, int64_t output = 16) {
  RequestFacts f;
  f.prompt.resize(static_cast<size_t>(n_tokens));
  std::iota(f.prompt.begin(), f.prompt.end(), first);
  f.prompt_tokens = n_tokens;
  f.work_tokens = n_tokens + output;
  return f;
}

TEST(WorkerPool, SharedPrefixStaysOnItsWorker) {
  Fixture fx(3);
  WorkerPool pool(fx.workers, dist::PolicyKind::kCacheAware, {});
  const RequestFacts first = Prompt(40, 0);  // 5 full pages of 8
  std::optional<Choice> c = pool.Choose(first);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cached_tokens, 0);
  EXPECT_EQ(c->keys.size(), 5u);
  Worker* holder = c->worker;
  WorkerPool::Dispatch(*c, first.prompt_tokens, first.work_tokens).End();
  EXPECT_EQ(holder->cache().size(), 5);
  // The same 40-token prefix plus a different tail, several times: always the holder.
  for (int i = 0; i < 5; ++i) {
    RequestFacts next = Prompt(40, 0);
    for (int t = 0; t < 12; ++t) next.prompt.push_back(1000 + 100 * i + t);
    next.prompt_tokens = 52;
    next.work_tokens = 68;
    c = pool.Choose(next);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->worker, holder);
    EXPECT_EQ(c->cached_tokens, 40);
    WorkerPool::Dispatch(*c, next.prompt_tokens, next.work_tokens).End();
  }
  EXPECT_EQ(holder->counters().requests, 6);
  EXPECT_EQ(holder->counters().prompt_tokens, 40 + 5 * 52);
  EXPECT_EQ(holder->counters().cached_prompt_tokens, 5 * 40);
  // Another prompt with no shared page goes to a worker whose cache is empty.
  c = pool.Choose(Prompt(40, 5000));
  ASSERT_TRUE(c);
  EXPECT_NE(c->worker, holder);
}

TEST(WorkerPool, LeaseCountsInFlightTokens) {
  Fixture fx(2);
  WorkerPool pool(fx.workers, dist::PolicyKind::kCacheAware, {});
  const RequestFacts f = Prompt(16, 0, 100);
  std::optional<Choice> c = pool.Choose(f);
  ASSERT_TRUE(c);
  {
    Lease lease = WorkerPool::Dispatch(*c, f.prompt_tokens, f.work_tokens);
    EXPECT_EQ(c->worker->in_flight_tokens(), 116);
    Lease moved = std::move(lease);
    EXPECT_EQ(c->worker->in_flight_tokens(), 116);
  }
  EXPECT_EQ(c->worker->in_flight_tokens(), 0);
}

TEST(WorkerPool, AHolderKeepsItsPrefixUntilTheLoadIsUneven) {
  Fixture fx(2);
  WorkerPool pool(fx.workers, dist::PolicyKind::kCacheAware, {});
  const RequestFacts f = Prompt(64, 0);
  std::optional<Choice> c = pool.Choose(f);
  Worker* holder = c->worker;
  WorkerPool::Dispatch(*c, f.prompt_tokens, f.work_tokens).End();
  {
    // 10,000 tokens outstanding: the holder still gets its prefix (affinity).
    Lease busy(holder, 10000);
    c = pool.Choose(f);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->worker, holder);
  }
  // 100,000: uneven beyond the balance thresholds, the idle worker gets it.
  Lease busy(holder, 100000);
  c = pool.Choose(f);
  ASSERT_TRUE(c);
  EXPECT_NE(c->worker, holder);
}

TEST(WorkerPool, InFlightPromptTokensCountUntilTheFirstAnswerBytes) {
  Fixture fx(1);
  WorkerPool pool(fx.workers, dist::PolicyKind::kCacheAware, {});
  const RequestFacts f = Prompt(128, 0);
  std::optional<Choice> c = pool.Choose(f);
  Lease lease = WorkerPool::Dispatch(*c, f.prompt_tokens, f.work_tokens);
  EXPECT_EQ(c->worker->in_flight_tokens(), f.work_tokens);
  lease.PrefillDone();
  EXPECT_EQ(c->worker->in_flight_tokens(), f.work_tokens - f.prompt_tokens);
  lease.End();
  EXPECT_EQ(c->worker->in_flight_tokens(), 0);
}

TEST(WorkerPool, SkipsUnroutableAndExcludedWorkers) {
  Fixture fx(3);
  WorkerPool pool(fx.workers, dist::PolicyKind::kRoundRobin, {});
  fx.workers[0]->SetRefused(true);
  for (int i = 0; i < 3; ++i) fx.workers[1]->RecordProbe(false);
  EXPECT_EQ(pool.CountRoutable(), 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool.Choose(RequestFacts{})->worker, fx.workers[2]);
  const std::vector<Worker*> tried = {fx.workers[2]};
  EXPECT_FALSE(pool.Choose(RequestFacts{}, tried).has_value());
  EXPECT_EQ(pool.CountRoutable(tried), 0);
}

TEST(WorkerPool, CacheAwareFallsBackWithoutPagesOrTokens) {
  Fixture unknown_pages(2, /*page_tokens=*/0);
  WorkerPool pool(unknown_pages.workers, dist::PolicyKind::kCacheAware, {});
  std::optional<Choice> c = pool.Choose(Prompt(40, 0));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->fell_back);
  EXPECT_TRUE(c->keys.empty());

  Fixture fx(2);
  WorkerPool known(fx.workers, dist::PolicyKind::kCacheAware, {});
  RequestFacts untokenized;
  untokenized.prompt_tokens = 100;
  untokenized.work_tokens = 200;
  c = known.Choose(untokenized);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->fell_back);
  EXPECT_FALSE(known.Choose(Prompt(40, 0))->fell_back);
}

TEST(WorkerPool, OtherPoliciesStillListTheKeys) {
  Fixture fx(2);
  WorkerPool pool(fx.workers, dist::PolicyKind::kPowerOfTwo, {.seed = 1});
  const RequestFacts f = Prompt(24, 0);
  std::optional<Choice> c = pool.Choose(f);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->keys.size(), 3u);
  WorkerPool::Dispatch(*c, f.prompt_tokens, f.work_tokens).End();
  EXPECT_EQ(c->worker->cache().size(), 3);
}

}  // namespace
}  // namespace deepinfer::router
