#include "core/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace deepinfer {
namespace {

TEST(ThreadPool, PartitionCoversRangeInGrainMultiples) {
  for (int n_threads : {1, 2, 3, 7}) {
    for (int64_t n : {0, 1, 5, 64, 100, 1000}) {
      for (int64_t grain : {1, 16, 64}) {
        int64_t expect_begin = 0;
        for (int t = 0; t < n_threads; ++t) {
          auto [b, e] = ThreadPool::Partition(n, grain, t, n_threads);
          EXPECT_EQ(b, expect_begin);
          EXPECT_LE(b, e);
          if (e < n) {
            EXPECT_EQ(e % grain, 0);
          }
          expect_begin = e;
        }
        EXPECT_EQ(expect_begin, n);
      }
    }
  }
}

TEST(ThreadPool, GrainForGivesChunksOfTheMinimumWork) {
  for (int64_t work :
       {int64_t{0}, int64_t{1}, int64_t{100}, int64_t{1000}, int64_t{4096},
        ThreadPool::kMinChunkWork - 1, ThreadPool::kMinChunkWork, int64_t{1} << 20}) {
    const int64_t g = ThreadPool::GrainFor(work);
    EXPECT_GE(g, 1) << work;
    EXPECT_GE(g * std::max<int64_t>(work, 1), ThreadPool::kMinChunkWork) << work;
    // The smallest such grain: one item less is below the minimum (or the grain is 1).
    if (g > 1) {
      EXPECT_LT((g - 1) * work, ThreadPool::kMinChunkWork) << work;
    }
  }
  // Four rows of 4,096 operations are one chunk: run on the caller, no hand-off.
  ThreadPool pool(2);
  const std::thread::id me = std::this_thread::get_id();
  int calls = 0;
  pool.ParallelFor(4, ThreadPool::GrainFor(4096), [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 4);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, RunCallsEveryThreadOnceEachTime) {
  ThreadPool pool(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> hits(3);
    pool.Run([&](int t) { hits[t].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ParallelForVisitsEachIndexOnce) {
  ThreadPool pool(2);
  std::vector<int> seen(1000, 0);
  pool.ParallelFor(1000, 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++seen[i];
  });
  for (int v : seen) EXPECT_EQ(v, 1);
}

// Chunks from the shared counter: every index once, chunk-aligned ranges, the tail chunk cut at n,
// and both threads take part when the work is long enough.
TEST(ThreadPool, ParallelForDynamicVisitsEachIndexOnceInChunks) {
  ThreadPool pool(2);
  for (int64_t n : {0, 5, 8, 9, 1001}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    std::atomic<int> bad_range{0};
    pool.ParallelForDynamic(n, 8, [&](int64_t b, int64_t e) {
      if (b % 8 != 0 || e - b > 8 || (e - b < 8 && e != n) || b >= e) ++bad_range;
      for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
    });
    EXPECT_EQ(bad_range.load(), 0) << n;
    for (const auto& v : seen) EXPECT_EQ(v.load(), 1) << n;
  }
  // Slow items: the second thread takes some before the caller drains the counter.
  std::mutex mu;
  std::set<std::thread::id> ids;
  pool.ParallelForDynamic(64, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, WakesAfterWorkersFellAsleep) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // past the spin window
  std::atomic<int> count{0};
  pool.Run([&](int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 2);
}

// Workers that start late (random delays inside fn, runs back to back, sleeps past the spin
// window): every index still runs exactly once per run, and never two runs' work at once.
TEST(ThreadPool, EveryIndexOncePerRunUnderLateWorkers) {
  ThreadPool pool(3);
  std::mt19937 rng(7);
  std::atomic<int> inside{0};
  std::atomic<int> overlap{0};
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::atomic<int>> hits(3);
    const int slow = static_cast<int>(rng() % 4);  // 3: nobody is slow
    pool.Run([&](int t) {
      if (inside.fetch_add(1) >= 3) overlap.fetch_add(1);
      if (t == slow) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 50));
      hits[static_cast<size_t>(t)].fetch_add(1);
      inside.fetch_sub(1);
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
    if (round % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(8));
  }
  EXPECT_EQ(overlap.load(), 0);
}

// On one CPU a worker runs only when the caller is preempted, so the caller finds the workers'
// indices unclaimed after its own and runs them itself instead of spinning out its time slice.
TEST(ThreadPool, CallerRunsIndicesOfWorkersThatHaveNotStarted) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &before)) ++cpu;
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  int64_t on_caller = 0;
  int64_t total = 0;
  {
    ThreadPool pool(3);  // its workers inherit the one-CPU mask
    const std::thread::id me = std::this_thread::get_id();
    for (int round = 0; round < 2000; ++round) {
      std::vector<std::thread::id> ran(3);
      pool.Run([&](int t) { ran[static_cast<size_t>(t)] = std::this_thread::get_id(); });
      EXPECT_EQ(ran[0], me);
      for (int t = 1; t < 3; ++t) {
        on_caller += ran[static_cast<size_t>(t)] == me ? 1 : 0;
        ++total;
      }
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
  // Most worker indices ran on the caller (a worker scheduled in between takes its own).
  EXPECT_GT(on_caller, total / 2);
}

TEST(ThreadPool, DestroysCleanlyWhileWorkersSleep) {
  auto pool = std::make_unique<ThreadPool>(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pool.reset();  // must not hang
  SUCCEED();
}

}  // namespace
}  // namespace deepinfer
