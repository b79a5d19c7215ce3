// ThreadPool: persistent compute threads with static partitioning.
//
// The caller is thread 0 and works too; n_threads - 1 workers spin on a generation counter while
// work keeps coming (a fork/join costs ~0.5 µs) and fall asleep on a futex after kSpinBeforeSleep
// of idleness, so an idle engine burns no CPU (the wake-up syscall is made only when one sleeps).
// Work is split into contiguous ranges that depend only on (n, n_threads) — never on timing — and
// kernels keep every output element's reduction inside one range (batch invariance: ranges split
// rows/columns/experts, never a reduction), so the bits never depend on which thread ran a range.
//
// Each index of a Run is claimed once: index t by worker t when it wakes, or by the caller once it
// has finished its own when worker t has not started it yet. A worker the OS has descheduled (a
// server's HTTP or delivery thread holding its core) then costs the call nothing instead of
// stalling it until the worker gets a time slice.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace deepinfer {

class ThreadPool {
 public:
  // n_threads <= 0 means one per available CPU.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(t) once for each t in [0, size()): t = 0 on the caller, t > 0 on worker t or, when
  // that worker has not claimed it by the time the caller finished its own, on the caller.
  // Returns when all have finished. fn(t) must not wait for another index (no barriers), and is
  // not reentrant: fn must not call Run on the same pool.
  template <typename F>
  void Run(F&& fn) {
    auto trampoline = [](void* ctx, int t) { (*static_cast<std::remove_reference_t<F>*>(ctx))(t); };
    RunRaw(trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into size() contiguous ranges (in multiples of `grain`) and calls
  // fn(begin, end) for each non-empty one.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) {
    const int64_t n_chunks = (n + grain - 1) / grain;
    if (n_threads_ == 1 || n_chunks <= 1) {
      if (n > 0) fn(int64_t{0}, n);
      return;
    }
    Run([&](int t) {
      auto [begin, end] = Partition(n, grain, t, n_threads_);
      if (begin < end) fn(begin, end);
    });
  }

  // Threads take chunks of `chunk` items of [0, n) from a shared counter and call fn(begin, end)
  // for each: for items of very different cost (causal rows). Which thread computes a chunk
  // depends on timing, so fn's result for an item must not depend on the thread or on the other
  // items of its chunk.
  template <typename F>
  void ParallelForDynamic(int64_t n, int64_t chunk, F&& fn) {
    if (n_threads_ == 1 || n <= chunk) {
      if (n > 0) fn(int64_t{0}, n);
      return;
    }
    std::atomic<int64_t> next{0};
    Run([&](int) {
      for (int64_t b = next.fetch_add(chunk, std::memory_order_relaxed); b < n;
           b = next.fetch_add(chunk, std::memory_order_relaxed)) {
        fn(b, std::min(n, b + chunk));
      }
    });
  }

  // A grain for ParallelFor over items of `work_per_item` element operations each: chunks of at
  // least kMinChunkWork, so a call too small to pay for a hand-off (a few rows of a narrow
  // model) runs on the caller alone. Item results never depend on the grain.
  static constexpr int64_t kMinChunkWork = int64_t{1} << 14;
  static int64_t GrainFor(int64_t work_per_item) {
    const int64_t w = std::max<int64_t>(1, work_per_item);
    return (kMinChunkWork + w - 1) / w;
  }

  // The range of thread t when [0, n) is split in multiples of grain over n_threads.
  static std::pair<int64_t, int64_t> Partition(int64_t n, int64_t grain, int t, int n_threads);

  // Process-wide pool used by kernels unless one is passed explicitly. Its size comes from
  // DEEPINFER_THREADS, else the number of available CPUs.
  static ThreadPool& Default();

 private:
  using RawFn = void (*)(void*, int);
  void RunRaw(RawFn fn, void* ctx);
  void WorkerLoop(int index);
  // Claims index t of run `run` (at most one claim per index and run succeeds).
  bool Claim(int t, uint64_t run);

  static constexpr std::chrono::milliseconds kSpinBeforeSleep{5};

  int n_threads_;
  std::vector<std::thread> workers_;
  RawFn fn_ = nullptr;
  void* ctx_ = nullptr;
  // Per index: 2·run while unclaimed in run `run`, 2·run + 1 once claimed.
  struct alignas(64) ClaimWord {
    std::atomic<uint64_t> v{0};
  };
  std::vector<ClaimWord> claims_;
  alignas(64) std::atomic<uint64_t> run_{0};         // the current run's number (from 1)
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word: bumped once per run
  alignas(64) std::atomic<int> done_{0};             // indices the workers finished this run
  alignas(64) std::atomic<int> sleepers_{0};         // workers on (or about to enter) the futex
  alignas(64) std::atomic<bool> stop_{false};
};

}  // namespace deepinfer
