#include "paired_bandwidth.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "core/thread_pool.h"

namespace deepinfer::bench {

namespace {
constexpr size_t kMinBufferBytes = size_t{256} << 20;

__attribute__((target("avx512f"))) uint64_t ReadRange(const uint8_t* p, size_t n) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    acc0 = _mm512_xor_si512(acc0, _mm512_load_si512(p + i));
    acc1 = _mm512_xor_si512(acc1, _mm512_load_si512(p + i + 64));
    acc2 = _mm512_xor_si512(acc2, _mm512_load_si512(p + i + 128));
    acc3 = _mm512_xor_si512(acc3, _mm512_load_si512(p + i + 192));
  }
  acc0 = _mm512_xor_si512(_mm512_xor_si512(acc0, acc1), _mm512_xor_si512(acc2, acc3));
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(acc0));
}
}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

PairedReader::PairedReader(size_t bytes_per_call)
    : slice_bytes_((bytes_per_call + 4095) & ~size_t{4095}),
      n_slices_(std::max<size_t>(2, (kMinBufferBytes + slice_bytes_ - 1) / slice_bytes_)),
      buffer_(slice_bytes_ * n_slices_ + 64) {
  std::mt19937_64 rng(1234);  // random bytes: zero pages read ~30% faster than real data
  auto* words = reinterpret_cast<uint64_t*>(buffer_.data());
  for (size_t i = 0; i < buffer_.size() / 8; ++i) words[i] = rng();
}

double PairedReader::ReadSlice() {
  auto* base = reinterpret_cast<const uint8_t*>((reinterpret_cast<uintptr_t>(buffer_.data()) + 63) &
                                                ~uintptr_t{63});
  const uint8_t* slice = base + (next_++ % n_slices_) * slice_bytes_;
  ThreadPool& pool = ThreadPool::Default();
  std::vector<uint64_t> sink(pool.size() * 8);
  const double t0 = NowSeconds();
  pool.ParallelFor(static_cast<int64_t>(slice_bytes_), 4096, [&](int64_t b, int64_t e) {
    sink[(b * pool.size() / slice_bytes_) * 8] = ReadRange(slice + b, static_cast<size_t>(e - b));
  });
  const double t = NowSeconds() - t0;
  benchmark::DoNotOptimize(sink.data());
  return t;
}

void ReportPaired(benchmark::State& state, std::vector<double>& ratios, double bytes,
                  double total_kernel_s, double total_read_s, size_t n) {
  if (ratios.empty()) return;
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  state.counters["GBps"] = bytes * static_cast<double>(n) / total_kernel_s * 1e-9;
  state.counters["read_GBps"] = bytes * static_cast<double>(n) / total_read_s * 1e-9;
  state.counters["pct_of_read"] = 100.0 * median;
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(n)));
}

size_t CopiesToDefeatCache(size_t bytes) {
  return std::max<size_t>(2, (size_t{192} << 20) / std::max<size_t>(bytes, 1) + 1);
}

}  // namespace deepinfer::bench
