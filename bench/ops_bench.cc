// Non-GEMM kernels at release shapes: RMSNorm over 5120 and sparse attention with 64 heads x 512
// over 640 indices (128 window + 512 compressed), one query row.
//   ./build/release/bench/ops_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/sparse_attn.h"
#include "paired_bandwidth.h"

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

// Prefill shape: `rows` consecutive query rows of one segment, each attending its window (up to
// 128 positions of the segment) and 512 selected compressed entries, 64 heads x 512, against the
// vdpbf16ps peak: every timed call is followed by a short peak loop, and the
// counter is the median of the per-call ratios (the host's load moves both alike).
void BM_SparseAttnPrefill(benchmark::State& state) {
  const int heads = 64, dim = 512, win = 128, topk = 512;
  const int64_t rows = state.range(0), n_comp = 1024;
  const int64_t n_kv = rows + n_comp, n_idx = win + topk;
  auto q = RandomBf16(rows * heads * dim, 3), kv = RandomBf16(n_kv * dim, 4);
  std::vector<int32_t> idx(rows * n_idx, -1);
  std::mt19937 rng(5);
  int64_t live = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* row = idx.data() + r * n_idx;
    int n = 0;
    for (int64_t p = std::max<int64_t>(0, r - win + 1); p <= r; ++p)
      row[n++] = static_cast<int32_t>(p);
    for (int j = 0; j < topk; ++j) row[n++] = static_cast<int32_t>(rows + rng() % n_comp);
    live += n;
  }
  std::vector<float> sink(heads, 0.5f);
  std::vector<uint16_t> out(rows * heads * dim);
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
  p.n_rows = rows;
  p.n_heads = heads;
  p.head_dim = dim;
  ThreadPool& pool = ThreadPool::Default();
  // q.kv and P.V over the live entries: 4 flops per (head, entry, dim).
  const double flops = 4.0 * heads * dim * static_cast<double>(live);
  std::vector<double> ratios;
  double total = 0;
  for (auto _ : state) {
    const double t0 = bench::NowSeconds();
    SparseAttn(p, &pool);
    const double dt = bench::NowSeconds() - t0;
    benchmark::DoNotOptimize(out.data());
    total += dt;
    state.SetIterationTime(dt);
    // A peak loop of about a quarter of the call's duration (one iteration ~3 ns).
    const double peak = bench::Bf16PeakGflopsOnce(static_cast<int64_t>(dt * 1e9 / 12.0));
    ratios.push_back(flops / dt * 1e-9 / peak);
  }
  std::sort(ratios.begin(), ratios.end());
  state.counters["GFLOPs"] = flops * state.iterations() / total * 1e-9;
  state.counters["pct_of_peak"] = 100.0 * ratios[ratios.size() / 2];
}
BENCHMARK(BM_SparseAttnPrefill)->Arg(256)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace deepinfer::kernels
