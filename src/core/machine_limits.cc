#include "core/machine_limits.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>

#include "core/cpu_features.h"
#include "core/huge_pages.h"
#include "core/splitmix64.h"
#include "core/thread_pool.h"

namespace deepinfer {
namespace {

constexpr int kPeakAcc = 24;  // independent accumulators: enough to cover the FMA latency x ports
constexpr int64_t kPeakIters = 2'000'000;

__attribute__((target("avx512f"), noinline)) uint64_t ReadRangeAvx512(const uint8_t* p, size_t n) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    acc0 = _mm512_xor_si512(acc0, _mm512_load_si512(p + i));
    acc1 = _mm512_xor_si512(acc1, _mm512_load_si512(p + i + 64));
    acc2 = _mm512_xor_si512(acc2, _mm512_load_si512(p + i + 128));
    acc3 = _mm512_xor_si512(acc3, _mm512_load_si512(p + i + 192));
  }
  acc0 = _mm512_xor_si512(_mm512_xor_si512(acc0, acc1), _mm512_xor_si512(acc2, acc3));
  // XOR of the lanes (a signed lane sum of arbitrary bits overflows: undefined behaviour).
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, acc0);
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  return r;
}

__attribute__((target("avx2"), noinline)) uint64_t ReadRangeAvx2(const uint8_t* p, size_t n) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    acc0 = _mm256_xor_si256(acc0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    acc1 = _mm256_xor_si256(acc1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    acc2 = _mm256_xor_si256(acc2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    acc3 = _mm256_xor_si256(acc3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  acc0 = _mm256_xor_si256(_mm256_xor_si256(acc0, acc1), _mm256_xor_si256(acc2, acc3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc0);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

uint64_t ReadRangeScalar(const uint8_t* p, size_t n) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    a ^= w[i / 8];
    b ^= w[i / 8 + 1];
  }
  return a ^ b;
}

uint64_t ReadRange(CpuLevel level, const uint8_t* p, size_t n) {
  if (level == CpuLevel::kAvx512) return ReadRangeAvx512(p, n);
  if (level == CpuLevel::kAvx2) return ReadRangeAvx2(p, n);
  return ReadRangeScalar(p, n);
}

__attribute__((target("avx512f,avx512bf16"), noinline)) float PeakLoopBf16(int64_t iters) {
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

__attribute__((target("avx2,fma"), noinline)) float PeakLoopFma(int64_t iters) {
  __m256 acc[kPeakAcc];
  for (int i = 0; i < kPeakAcc; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 a = _mm256_set1_ps(1.0f), b = _mm256_setzero_ps();
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kPeakAcc; ++i) acc[i] = _mm256_fmadd_ps(a, b, acc[i]);
    __asm__ volatile("" : "+x"(a), "+x"(b));
  }
  __m256 s = acc[0];
  for (int i = 1; i < kPeakAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

__attribute__((noinline)) float PeakLoopScalar(int64_t iters) {
  float acc[kPeakAcc];
  for (int i = 0; i < kPeakAcc; ++i) acc[i] = static_cast<float>(i);
  float a = 1.0f, b = 0.0f;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakAcc; ++i) acc[i] = std::fma(a, b, acc[i]);
    __asm__ volatile("" : "+x"(a), "+x"(b));
  }
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

// Flops of one iteration of the loop for `level` on one thread.
double FlopsPerIter(CpuLevel level) {
  if (level == CpuLevel::kAvx512) return 64.0 * kPeakAcc;  // 32 MACs per vdpbf16ps
  if (level == CpuLevel::kAvx2) return 16.0 * kPeakAcc;    // 8 MACs per vfmadd
  return 2.0 * kPeakAcc;
}

float PeakLoop(CpuLevel level, int64_t iters) {
  if (level == CpuLevel::kAvx512) return PeakLoopBf16(iters);
  if (level == CpuLevel::kAvx2) return PeakLoopFma(iters);
  return PeakLoopScalar(iters);
}

}  // namespace

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t BeyondCacheBytes() {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<size_t>(size_t{256} << 20, llc > 0 ? 4 * static_cast<size_t>(llc) : 0);
}

ReadBandwidthProbe::ReadBandwidthProbe(size_t bytes_per_read, ThreadPool* pool,
                                       size_t min_buffer_bytes)
    : pool_(pool ? pool : &ThreadPool::Default()),
      slice_bytes_((std::max<size_t>(bytes_per_read, 4096) + 4095) & ~size_t{4095}),
      n_slices_(std::max<size_t>(
          2, ((min_buffer_bytes ? min_buffer_bytes : BeyondCacheBytes()) + slice_bytes_ - 1) /
                 slice_bytes_)),
      buffer_(static_cast<uint8_t*>(AllocateLarge(slice_bytes_ * n_slices_))),
      sink_(static_cast<size_t>(pool_->size()) * 8) {
  if (!buffer_) throw std::bad_alloc();
  // Pseudo-random words (SplitMix64 of the index, a bijection): no page is zero or equal to
  // another, so none can be the shared zero page or merged with another. Written by every pool
  // thread (one mt19937 thread took 4.5 s for the 5.3 GB a decode-step probe holds).
  auto* words = reinterpret_cast<uint64_t*>(buffer_.get());
  const auto n_words = static_cast<int64_t>(slice_bytes_ * n_slices_ / 8);
  pool_->ParallelFor(n_words, int64_t{1} << 16, [words](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) words[i] = SplitMix64(static_cast<uint64_t>(i));
  });
}

double ReadBandwidthProbe::ReadSlice() {
  const uint8_t* slice = buffer_.get() + (next_++ % n_slices_) * slice_bytes_;
  const CpuLevel level = ActiveCpuLevel();
  const int n_threads = pool_->size();
  const int64_t total = static_cast<int64_t>(slice_bytes_);
  const double t0 = MonotonicSeconds();
  pool_->ParallelFor(total, 4096, [&](int64_t b, int64_t e) {
    const int64_t t = b * n_threads / total;  // the range's thread: one sink line each
    sink_[static_cast<size_t>(t) * 8] ^= ReadRange(level, slice + b, static_cast<size_t>(e - b));
  });
  const double t = MonotonicSeconds() - t0;
  __asm__ volatile("" : : "r"(sink_.data()) : "memory");
  return t;
}

double PeakGflopsOnce(int64_t iters, ThreadPool* pool) {
  ThreadPool& p = pool ? *pool : ThreadPool::Default();
  const CpuLevel level = ActiveCpuLevel();
  std::vector<float> sink(static_cast<size_t>(p.size()) * 16);
  const double t0 = MonotonicSeconds();
  p.Run([&](int t) { sink[static_cast<size_t>(t) * 16] = PeakLoop(level, iters); });
  const double dt = MonotonicSeconds() - t0;
  __asm__ volatile("" : : "r"(sink.data()) : "memory");
  return FlopsPerIter(level) * static_cast<double>(iters) * p.size() / dt * 1e-9;
}

double MeasurePeakGflops(ThreadPool* pool, int reps) {
  double best = 0.0;
  for (int r = 0; r < std::max(reps, 1); ++r)
    best = std::max(best, PeakGflopsOnce(kPeakIters, pool));
  return best;
}

const char* PeakInstructionName() {
  switch (ActiveCpuLevel()) {
    case CpuLevel::kAvx512:
      return "vdpbf16ps";
    case CpuLevel::kAvx2:
      return "fma-f32x8";
    default:
      return "scalar-fma";
  }
}

}  // namespace deepinfer
