// bf16 GEMV on the checkpoint layout (no repack), 1x5120 @ 5120x512 (e.g. a compressor /
// indexer projection): GB/s and pct_of_read against a paired plain read (bench/paired_bandwidth.h),
// weights rotated over CopiesToDefeatCache copies. Also fp32 GEMV with bf16-stored weights
// (the fp32 head / gate path) at the same shape.
// Also the batched decode shapes (compute, not bandwidth): the head, 1..64 rows @ 5120 x 32768
// bf16 (a quarter of the vocabulary), and the hyper-connection mixes, rows @ 20480 x 24 fp32,
// in GFLOP/s against the `vdpbf16ps` peak loop measured right after each call
// (bench/bf16_peak.h; the fp32 mixes have half that peak on FMA).
//   ./build-mxfp4/bench/gemm_bf16_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_f32.h"
#include "paired_bandwidth.h"

namespace deepinfer::kernels {
namespace {

constexpr int64_t kN = 512, kK = 5120;

std::vector<std::vector<uint16_t>> WeightCopies(size_t bytes) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<uint16_t> w(kN * kK);
  for (auto& v : w) v = FloatToBf16(nd(rng));
  return std::vector<std::vector<uint16_t>>(bench::CopiesToDefeatCache(bytes), w);
}

void BM_GemvBf16(benchmark::State& state) {
  const size_t bytes = kN * kK * 2;
  const auto copies = WeightCopies(bytes);
  std::vector<uint16_t> x(kK, FloatToBf16(0.5f));
  std::vector<float> out(kN);
  bench::PairedReader reader(bytes);
  ThreadPool& pool = ThreadPool::Default();
  size_t next = 0;
  bench::RunPaired(state, reader, bytes, [&] {
    const auto& w = copies[next++ % copies.size()];
    GemmBf16(w.data(), kN, kK, kK, x.data(), 1, kK, out.data(), DType::kF32, kN, &pool);
  });
  state.counters["threads"] = pool.size();
}

void BM_GemvF32Bf16Weights(benchmark::State& state) {
  const size_t bytes = kN * kK * 2;
  const auto copies = WeightCopies(bytes);
  std::vector<float> x(kK, 0.5f), out(kN);
  bench::PairedReader reader(bytes);
  ThreadPool& pool = ThreadPool::Default();
  size_t next = 0;
  bench::RunPaired(state, reader, bytes, [&] {
    const auto& w = copies[next++ % copies.size()];
    GemmF32(w.data(), DType::kBF16, kN, kK, kK, x.data(), 1, kK, out.data(), DType::kF32, kN,
            &pool);
  });
  state.counters["threads"] = pool.size();
}

// The head of a small-width model (the trained default model: 129,280 x 256 bf16, 66 MB): a
// weight stream with short rows, for 1..8 activation rows (decode, DSpark verify, small
// batches). Bandwidth-bound at every m here, so reported against the paired read: m rows should
// cost what one row costs.
void BM_HeadNarrowBf16(benchmark::State& state) {
  const int64_t m = state.range(0), n = 129280, k = 256;
  const size_t bytes = static_cast<size_t>(n * k * 2);
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<uint16_t> w(n * k), x(m * k);
  for (auto& v : w) v = FloatToBf16(nd(rng));
  for (auto& v : x) v = FloatToBf16(nd(rng));
  const std::vector<std::vector<uint16_t>> copies(bench::CopiesToDefeatCache(bytes), w);
  std::vector<float> out(m * n);
  bench::PairedReader reader(bytes);
  ThreadPool& pool = ThreadPool::Default();
  size_t next = 0;
  bench::RunPaired(state, reader, bytes, [&] {
    const auto& wc = copies[next++ % copies.size()];
    GemmBf16(wc.data(), n, k, k, x.data(), m, k, out.data(), DType::kF32, n, &pool);
  });
  state.counters["threads"] = pool.size();
}

// Runs `call` per iteration with a short peak-loop run after it; reports the summed flops over
// the kernel's time against the median of those peaks.
template <typename Fn>
void RunAgainstPeak(benchmark::State& state, double flops_per_call, Fn call) {
  std::vector<double> peaks;
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(dt);
    total += dt;
    peaks.push_back(bench::Bf16PeakGflopsOnce(20000));
  }
  std::sort(peaks.begin(), peaks.end());
  const double gflops = flops_per_call * static_cast<double>(state.iterations()) / total * 1e-9;
  const double peak = peaks[peaks.size() / 2];
  state.counters["GFLOPs"] = gflops;
  state.counters["peak_GFLOPs"] = peak;
  state.counters["pct_of_peak"] = 100.0 * gflops / peak;
}

void BM_HeadBf16(benchmark::State& state) {
  const int64_t m = state.range(0), n = 32768, k = 5120;
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<uint16_t> w(n * k), x(m * k);
  for (auto& v : w) v = FloatToBf16(nd(rng));
  for (auto& v : x) v = FloatToBf16(nd(rng));
  std::vector<float> out(m * n);
  ThreadPool& pool = ThreadPool::Default();
  RunAgainstPeak(state, 2.0 * m * n * k, [&] {
    GemmBf16(w.data(), n, k, k, x.data(), m, k, out.data(), DType::kF32, n, &pool);
  });
  state.counters["threads"] = pool.size();
}

// The hc mixes: the fp32 product of the bf16 stream [m, 20480] with the 24 mix rows. stream:0
// widens the stream into an fp32 copy first (what the model did before 2026-12-01), stream:1 lets
// the kernel widen in registers. The fp32 FMA peak is half of the vdpbf16ps peak reported here.
void BM_HcMixesF32(benchmark::State& state) {
  const int64_t m = state.range(0), n = 24, k = 20480;
  const bool direct = state.range(1) != 0;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> w(n * k), out(m * n);
  std::vector<uint16_t> x(m * k);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = FloatToBf16(nd(rng));
  ThreadPool& pool = ThreadPool::Default();
  RunAgainstPeak(state, 2.0 * m * n * k, [&] {
    if (direct) {
      GemmF32(w.data(), DType::kF32, n, k, k, x.data(), m, k, out.data(), DType::kF32, n, &pool);
      return;
    }
    std::vector<float> xf(m * k);
    pool.ParallelFor(m, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * k; i < r1 * k; ++i) xf[i] = Bf16ToFloat(x[i]);
    });
    GemmF32(w.data(), DType::kF32, n, k, k, xf.data(), m, k, out.data(), DType::kF32, n, &pool);
  });
  state.counters["threads"] = pool.size();
}

BENCHMARK(BM_GemvBf16)->UseManualTime()->Iterations(300)->Repetitions(3);
BENCHMARK(BM_HeadBf16)
    ->ArgName("m")
    ->Arg(1)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HeadNarrowBf16)
    ->ArgName("m")
    ->DenseRange(1, 4)
    ->Arg(8)
    ->Iterations(60)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HcMixesF32)
    ->ArgNames({"m", "stream"})
    ->ArgsProduct({{1, 32, 256, 2048}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GemvF32Bf16Weights)->UseManualTime()->Iterations(300)->Repetitions(3);

}  // namespace
}  // namespace deepinfer::kernels
