// Non-GEMM kernels at release shapes: RMSNorm over 5120 and sparse attention with 64 heads x 512
// over 640 indices (128 window + 512 compressed), one query row.
//   ./build/release/bench/ops_bench
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/sparse_attn.h"

namespace deepinfer::kernels {
namespace {

std::vector<uint16_t> RandomBf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = FloatToBf16(dist(rng));
  return v;
}

void BM_RmsNorm5120(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = 5120;
  auto x = RandomBf16(rows * dim, 1), w = RandomBf16(dim, 2);
  std::vector<uint16_t> y(rows * dim);
  RmsNormParams p{x.data(), dim, w.data(), y.data(), dim, rows, dim, 1e-20f};
  for (auto _ : state) {
    RmsNorm(p);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * rows * dim * 4);
}
BENCHMARK(BM_RmsNorm5120)->Arg(1)->Arg(64);

void BM_SparseAttn(benchmark::State& state) {
  const int heads = 64, dim = 512, n_idx = 640, n_kv = 4096;
  auto q = RandomBf16(heads * dim, 3), kv = RandomBf16(n_kv * dim, 4);
  std::vector<int32_t> idx(n_idx);
  std::mt19937 rng(5);
  for (auto& i : idx) i = static_cast<int32_t>(rng() % n_kv);
  std::vector<float> sink(heads, 0.5f);
  std::vector<uint16_t> out(heads * dim);
  SparseAttnParams p;
  p.q = q.data();
  p.q_row_stride = heads * dim;
  p.kv = kv.data();
  p.kv_stride = dim;
  p.n_kv = n_kv;
  p.idx = idx.data();
  p.idx_stride = n_idx;
  p.n_idx = n_idx;
  p.sink = sink.data();
  p.scale = 1.0f / 22.627417f;
  p.out = out.data();
  p.out_row_stride = heads * dim;
  p.n_rows = 1;
  p.n_heads = heads;
  p.head_dim = dim;
  ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (state.range(1)) {
      SparseAttnRef(p);
    } else {
      SparseAttn(p, &pool);
    }
    benchmark::DoNotOptimize(out.data());
  }
  // q.kv and P.V: 2 * heads * n_idx * dim multiply-adds.
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * heads * n_idx * dim * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SparseAttn)->Args({1, 0})->Args({2, 0})->Args({1, 1})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace deepinfer::kernels
