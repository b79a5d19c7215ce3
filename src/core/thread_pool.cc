#include "core/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#define DI_CPU_RELAX() _mm_pause()
#else
#define DI_CPU_RELAX() std::this_thread::yield()
#endif

namespace deepinfer {

namespace {
// Direct futex calls: libstdc++ 12's std::atomic::wait can miss a notify_all at shutdown.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

int AvailableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}
}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : AvailableCpus()),
      claims_(static_cast<size_t>(n_threads_)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  FutexWakeAll(&generation_);
  for (std::thread& w : workers_) w.join();
}

std::pair<int64_t, int64_t> ThreadPool::Partition(int64_t n, int64_t grain, int t, int n_threads) {
  const int64_t n_chunks = (n + grain - 1) / grain;
  const int64_t first = n_chunks * t / n_threads;
  const int64_t last = n_chunks * (t + 1) / n_threads;
  const int64_t begin = std::min(n, first * grain);
  const int64_t end = std::min(n, last * grain);
  return {begin, end};
}

bool ThreadPool::Claim(int t, uint64_t run) {
  uint64_t unclaimed = 2 * run;
  return claims_[static_cast<size_t>(t)].v.compare_exchange_strong(
      unclaimed, 2 * run + 1, std::memory_order_acq_rel, std::memory_order_relaxed);
}

void ThreadPool::RunRaw(RawFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0);
    return;
  }
  // The previous run has finished (every index ran and was counted), so no worker can be inside
  // fn_ or hold a claim of it: publish the new run's claims, function and counters, then its
  // number and generation (release: a worker that reads them sees the rest).
  const uint64_t run = run_.load(std::memory_order_relaxed) + 1;
  for (int t = 1; t < n_threads_; ++t) {
    claims_[static_cast<size_t>(t)].v.store(2 * run, std::memory_order_relaxed);
  }
  fn_ = fn;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  run_.store(run, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // A worker counts itself in sleepers_ before it re-reads the generation in the futex call, so
  // either it sees the new generation there or this load sees it (both sequentially consistent).
  if (sleepers_.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&generation_);
  fn(ctx, 0);
  int by_caller = 1;
  for (int t = 1; t < n_threads_; ++t) {
    if (Claim(t, run)) {
      fn(ctx, t);
      ++by_caller;
    }
  }
  // Every index is claimed now; wait for the ones the workers took.
  const int by_workers = n_threads_ - by_caller;
  while (done_.load(std::memory_order_acquire) < by_workers) DI_CPU_RELAX();
}

void ThreadPool::WorkerLoop(int index) {
  // Generation 0 is the constructor's; a worker that starts late must still see the first Run.
  uint32_t seen = 0;
  for (;;) {
    // Spin for a while (cheap wake-up during a busy decode step), then sleep on the futex.
    auto spin_start = std::chrono::steady_clock::now();
    uint32_t now_gen;
    int spins = 0;
    while ((now_gen = generation_.load(std::memory_order_acquire)) == seen) {
      DI_CPU_RELAX();
      if (++spins == 1024) {
        spins = 0;
        if (std::chrono::steady_clock::now() - spin_start > kSpinBeforeSleep) {
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          FutexWait(&generation_, seen);
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        }
      }
    }
    seen = now_gen;
    if (stop_.load(std::memory_order_acquire)) return;
    // The newest run: a worker that slept through runs the caller did alone just joins this one
    // (or finds its index taken). A run cannot end while this worker holds a claim of it, so
    // fn_ and ctx_ stay that run's until done_ counts the claim.
    const uint64_t run = run_.load(std::memory_order_acquire);
    if (run == 0 || !Claim(index, run)) continue;
    fn_(ctx_, index);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

ThreadPool& ThreadPool::Default() {
  static ThreadPool pool([] {
    if (const char* env = std::getenv("DEEPINFER_THREADS")) {
      const int n = std::atoi(env);
      if (n > 0) return n;
    }
    return AvailableCpus();
  }());
  return pool;
}

}  // namespace deepinfer
