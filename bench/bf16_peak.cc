#include "bf16_peak.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "paired_bandwidth.h"

namespace deepinfer::bench {
namespace {

constexpr int kPeakAcc = 24;
constexpr int64_t kPeakIters = 2'000'000;

__attribute__((target("avx512f,avx512bf16"), noinline)) float PeakLoop(int64_t iters) {
  __m512 acc[kPeakAcc];
  for (int i = 0; i < kPeakAcc; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80);  // (1.0, 1.0)
  __m512bh b = (__m512bh)_mm512_set1_epi32(0x00000000);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kPeakAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));  // keep the operands opaque
  }
  __m512 s = acc[0];
  for (int i = 1; i < kPeakAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace

double Bf16PeakGflopsOnce(int64_t iters) {
  ThreadPool& pool = ThreadPool::Default();
  std::vector<float> sink(pool.size() * 16);
  const double t0 = NowSeconds();
  pool.Run([&](int t) { sink[t * 16] = PeakLoop(iters); });
  const double dt = NowSeconds() - t0;
  benchmark::DoNotOptimize(sink.data());
  return 64.0 * kPeakAcc * iters * pool.size() / dt * 1e-9;
}

double MeasureBf16PeakGflops() {
  ThreadPool& pool = ThreadPool::Default();
  std::vector<float> sink(pool.size() * 16);
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = NowSeconds();
    pool.Run([&](int t) { sink[t * 16] = PeakLoop(kPeakIters); });
    const double dt = NowSeconds() - t0;
    best = std::max(best, 64.0 * kPeakAcc * kPeakIters * pool.size() / dt * 1e-9);
  }
  benchmark::DoNotOptimize(sink.data());
  return best;
}

}  // namespace deepinfer::bench
