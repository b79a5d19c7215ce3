// MXFP4 routed-expert GEMV / GEMV-M at release shapes (V4.1-Flash: dim 5120, moe_inter 2304):
//   * M=1 decode GEMVs report pct_of_read: kernel bandwidth (packed weights + inline scales) over
//     a plain AVX-512 read of an equal-size random buffer run right before each call
//     (bench/paired_bandwidth.h); weights rotate over CopiesToDefeatCache copies so no call finds
//     them in cache;
//   * M=8 (prefill, ~8 tokens per expert) reports GFLOP/s (compute-bound);
//   * GemvMany: 6 experts' w1|w3 at one row each in one Mxfp4GemmMany call (a batch-1 MoE step),
//     pct_of_read like the GEMVs.
// Thread count: DEEPINFER_THREADS (default: all CPUs).
//   ./build-mxfp4/bench/mxfp4_gemm_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "paired_bandwidth.h"

namespace deepinfer::kernels {
namespace {

// Random packed copies of an [n, k] MXFP4 matrix (uniform nibbles, scales 2^-8 .. 2^-4).
struct WeightCopies {
  std::vector<PackedMxfp4Matrix> copies;
  size_t bytes = 0;
};

WeightCopies MakeCopies(int64_t n, int64_t k, size_t n_copies) {
  std::mt19937 rng(5);
  std::vector<uint8_t> weight(n * k / 2), scale(n * k / 32);
  for (auto& b : weight) b = static_cast<uint8_t>(rng());
  for (auto& s : scale) s = static_cast<uint8_t>(119 + rng() % 5);
  const Mxfp4Source src{weight.data(), scale.data(), n};
  WeightCopies w;
  for (size_t i = 0; i < n_copies; ++i) {
    w.copies.push_back(std::move(PackedMxfp4Matrix::Pack({&src, 1}, k).value()));
  }
  w.bytes = w.copies[0].bytes();
  return w;
}

std::vector<uint16_t> Activations(int64_t m, int64_t k) {
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> x(m * k), xq(m * k);
  for (auto& v : x) v = FloatToBf16(nd(rng));
  for (int64_t r = 0; r < m; ++r) QuantizeActScaledBf16Ref(x.data() + r * k, k, xq.data() + r * k);
  return xq;
}

void RunGemv(benchmark::State& state, int64_t n, int64_t k) {
  const size_t bytes = PackedMxfp4Bytes(n, k);
  const WeightCopies w = MakeCopies(n, k, bench::CopiesToDefeatCache(bytes));
  const std::vector<uint16_t> xq = Activations(1, k);
  std::vector<uint16_t> out(n);
  bench::PairedReader reader(bytes);
  ThreadPool& pool = ThreadPool::Default();
  size_t next = 0;
  bench::RunPaired(state, reader, bytes, [&] {
    const PackedMxfp4View& v = w.copies[next++ % w.copies.size()].view();
    Mxfp4Gemm(v, xq.data(), 1, k, out.data(), DType::kBF16, n, &pool);
  });
  state.counters["threads"] = pool.size();
}

// A batch-1 MoE step's routed w1|w3 products: `experts` different matrices, one row each, in one
// Mxfp4GemmMany call (the engine's call; its panels of all experts split over the threads).
void RunGemvMany(benchmark::State& state, int64_t n, int64_t k, int64_t experts) {
  const size_t bytes = PackedMxfp4Bytes(n, k) * experts;
  const WeightCopies w = MakeCopies(n, k, experts * bench::CopiesToDefeatCache(bytes));
  const std::vector<uint16_t> xq = Activations(1, k);
  std::vector<uint16_t> out(n * experts);
  bench::PairedReader reader(bytes);
  ThreadPool& pool = ThreadPool::Default();
  std::vector<Mxfp4Job> jobs(experts);
  size_t next = 0;
  bench::RunPaired(state, reader, bytes, [&] {
    for (int64_t e = 0; e < experts; ++e) {
      jobs[e] = Mxfp4Job{w.copies[next++ % w.copies.size()].view(),
                         xq.data(),
                         1,
                         k,
                         out.data() + e * n,
                         DType::kBF16,
                         n};
    }
    Mxfp4GemmMany(jobs, &pool);
  });
  state.counters["threads"] = pool.size();
}

// panel: call the panel GEMM directly (any m), else the public entry point's choice.
void RunGemvM(benchmark::State& state, int64_t n, int64_t k, int64_t m, bool panel = false) {
  const size_t bytes = PackedMxfp4Bytes(n, k);
  const WeightCopies w = MakeCopies(n, k, bench::CopiesToDefeatCache(bytes));
  const std::vector<uint16_t> xq = Activations(m, k);
  std::vector<uint16_t> out(m * n);
  ThreadPool& pool = ThreadPool::Default();
  size_t next = 0;
  double total = 0.0;
  std::vector<double> peaks;
  for (auto _ : state) {
    const PackedMxfp4View& v = w.copies[next++ % w.copies.size()].view();
    const double t0 = bench::NowSeconds();
    if (panel) {
      const Mxfp4Call call{v, xq.data(), m, k, nullptr, out.data(), DType::kBF16, n};
      if (ActiveCpuLevel() == CpuLevel::kAvx512) {
        Mxfp4PanelGemmAvx512(call, &pool);
      } else if (ActiveCpuLevel() == CpuLevel::kAvx2) {
        Mxfp4PanelGemmAvx2(call, &pool);
      } else {
        Mxfp4Gemm(v, xq.data(), m, k, out.data(), DType::kBF16, n, &pool);
      }
    } else {
      Mxfp4Gemm(v, xq.data(), m, k, out.data(), DType::kBF16, n, &pool);
    }
    const double dt = bench::NowSeconds() - t0;
    state.SetIterationTime(dt);
    total += dt;
    peaks.push_back(bench::Bf16PeakGflopsOnce(20000));  // paired: the host's rate drifts
  }
  std::sort(peaks.begin(), peaks.end());
  state.counters["GFLOPs"] =
      2.0 * m * n * k * static_cast<double>(state.iterations()) / total * 1e-9;
  state.counters["pct_of_peak"] = 100.0 * state.counters["GFLOPs"] / peaks[peaks.size() / 2];
  state.counters["threads"] = pool.size();
}

// Fused w1|w3: x[1, 5120] · [4608, 5120]ᵀ; w2: x[1, 2304] · [5120, 2304]ᵀ.
void BM_Mxfp4Gemv_W13(benchmark::State& s) { RunGemv(s, 2 * 2304, 5120); }
void BM_Mxfp4Gemv_W2(benchmark::State& s) { RunGemv(s, 5120, 2304); }
void BM_Mxfp4GemvMany_W13(benchmark::State& s) { RunGemvMany(s, 2 * 2304, 5120, s.range(0)); }
void BM_Mxfp4GemvM_W13(benchmark::State& s) { RunGemvM(s, 2 * 2304, 5120, s.range(0)); }
void BM_Mxfp4GemvM_W2(benchmark::State& s) { RunGemvM(s, 5120, 2304, s.range(0)); }

BENCHMARK(BM_Mxfp4Gemv_W13)->UseManualTime()->Iterations(200)->Repetitions(3);
BENCHMARK(BM_Mxfp4Gemv_W2)->UseManualTime()->Iterations(200)->Repetitions(3);
BENCHMARK(BM_Mxfp4GemvMany_W13)->UseManualTime()->Iterations(50)->Repetitions(3)->Arg(6);
BENCHMARK(BM_Mxfp4GemvM_W13)
    ->UseManualTime()
    ->Iterations(50)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Arg(12)
    ->Arg(24)
    ->Arg(32);
BENCHMARK(BM_Mxfp4GemvM_W2)->UseManualTime()->Iterations(50)->Arg(8);

// Prefill: the panel GEMM of the active level (AVX-512 or AVX2) called directly (Mxfp4Gemm picks
// it from Mxfp4PanelGemmMinRows(level) rows on; ~768 rows per expert for 2048 tokens top-6 of 16),
// against the peak measured in the same program (vdpbf16ps, or the fp32 FMA peak on AVX2 hosts).
void RunPanelGemm(benchmark::State& state, int64_t n, int64_t k, int64_t m) {
  RunGemvM(state, n, k, m, /*panel=*/true);
}
void BM_Mxfp4PanelGemm_W13(benchmark::State& s) { RunPanelGemm(s, 2 * 2304, 5120, s.range(0)); }
void BM_Mxfp4PanelGemm_W2(benchmark::State& s) { RunPanelGemm(s, 5120, 2304, s.range(0)); }
BENCHMARK(BM_Mxfp4PanelGemm_W13)
    ->UseManualTime()
    ->Iterations(10)
    ->Arg(4)
    ->Arg(8)
    ->Arg(12)
    ->Arg(16)
    ->Arg(24)
    ->Arg(32)
    ->Arg(128)
    ->Arg(768);
BENCHMARK(BM_Mxfp4PanelGemm_W2)->UseManualTime()->Iterations(10)->Arg(768);
// Whole-prefill expert batches (512 and 2,048 rows); few iterations: ~2 s per call on AVX2.
BENCHMARK(BM_Mxfp4PanelGemm_W13)
    ->Name("BM_Mxfp4PanelGemm_W13_Large")
    ->UseManualTime()
    ->Iterations(3)
    ->Arg(512)
    ->Arg(2048);
BENCHMARK(BM_Mxfp4PanelGemm_W2)
    ->Name("BM_Mxfp4PanelGemm_W2_Large")
    ->UseManualTime()
    ->Iterations(3)
    ->Arg(512)
    ->Arg(2048);

}  // namespace
}  // namespace deepinfer::kernels
