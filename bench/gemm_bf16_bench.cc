// bf16 GEMV on the checkpoint layout (no repack), 1x5120 @ 5120x512 (e.g. a compressor /
// indexer projection): GB/s and pct_of_read against a paired plain read (bench/paired_bandwidth.h),
// weights rotated over CopiesToDefeatCache copies. Also fp32 GEMV with bf16-stored weights
// (the fp32 head / gate path) at the same shape.
//   ./build-mxfp4/bench/gemm_bf16_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

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

BENCHMARK(BM_GemvBf16)->UseManualTime()->Iterations(300)->Repetitions(3);
BENCHMARK(BM_GemvF32Bf16Weights)->UseManualTime()->Iterations(300)->Repetitions(3);

}  // namespace
}  // namespace deepinfer::kernels
