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

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : AvailableCpus()) {
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

void ThreadPool::RunRaw(RawFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&generation_);
  fn(ctx, 0);
  while (pending_.load(std::memory_order_acquire) != 0) DI_CPU_RELAX();
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
          FutexWait(&generation_, seen);
        }
      }
    }
    seen = now_gen;
    if (stop_.load(std::memory_order_acquire)) return;
    fn_(ctx_, index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
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
