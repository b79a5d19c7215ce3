// Dense FP8 GEMV / GEMV-M / GEMM at release shapes, against physical limits measured in the same
// process:
//   * decode GEMVs report pct_of_read: kernel bandwidth (weights + scales) over a plain AVX-512
//     read of an equal-size random buffer run right before each call (bench/paired_bandwidth.h);
//     weights rotate over enough packed copies that no call finds them in cache;
//   * the prefill GEMM reports GFLOP/s and pct_of_peak against BM_Bf16DotPeak, a `vdpbf16ps`
//     loop with 24 independent accumulators on every pool thread (on an AVX2-only host: 8-lane
//     fp32 FMAs, the instruction the AVX2 kernels use; core/machine_limits.h).
// The `path` argument picks an AVX-512 algorithm; rows with path != 0 are skipped elsewhere.
// Thread count: DEEPINFER_THREADS (default: all CPUs).
//   ./build-fp8/bench/fp8_gemm_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/fp8_gemm.h"
#include "kernels/cpu/fp8_gemm_internal.h"
#include "paired_bandwidth.h"

namespace deepinfer::kernels {
namespace {

double MeasureBf16Peak() { return bench::MeasureBf16PeakGflops(); }

double& PeakGflops() {
  static double peak = 0.0;
  return peak;
}

void BM_Bf16DotPeak(benchmark::State& state) {
  double gflops = 0.0;
  for (auto _ : state) {
    const double t0 = bench::NowSeconds();
    gflops = MeasureBf16Peak();
    state.SetIterationTime(bench::NowSeconds() - t0);
  }
  PeakGflops() = std::max(PeakGflops(), gflops);
  state.counters["GFLOPs"] = gflops;
  state.counters["threads"] = ThreadPool::Default().size();
}
BENCHMARK(BM_Bf16DotPeak)->UseManualTime()->Iterations(3);

// ---- weights and activations ---------------------------------------------------------------

// The e4m3 codes of Gaussian weights as a checkpoint holds them (sigma = 448 / 4, so a 32x32 tile's
// largest magnitude lands near the top of the range; `deepinfer make-checkpoint` quantizes the same
// way): about 0.5% of the 64-byte chunks hold a zero or subnormal code and take the GEMV's LUT
// decode (fp8_gemm.h special_chunks). Scales near 2^-8.
PackedFp8Matrix RandomPacked(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, kE4m3Max / 4);
  std::vector<uint8_t> codes(n * k), scales(((n + 31) / 32) * (k / 32));
  for (auto& c : codes) c = FloatToE4m3(normal(rng));  // saturates at ±448
  for (auto& s : scales) s = static_cast<uint8_t>(115 + rng() % 8);
  return std::move(PackFp8Matrix(codes.data(), scales.data(), n, k)).value();
}

PackedFp8Matrix Clone(const PackedFp8Matrix& w) {
  PackedFp8Matrix c;
  c.n = w.n;
  c.k = w.k;
  c.n_panels = w.n_panels;
  c.codes.EnsureSize(w.codes.size());
  c.scales.EnsureSize(w.scales.size());
  c.special_chunks.EnsureSize(w.special_chunks.size());
  std::memcpy(c.codes.data(), w.codes.data(), w.codes.size());
  std::memcpy(c.scales.data(), w.scales.data(), w.scales.size() * sizeof(float));
  std::memcpy(c.special_chunks.data(), w.special_chunks.data(),
              w.special_chunks.size() * sizeof(uint32_t));
  c.nan_codes = w.nan_codes;
  return c;
}

std::vector<uint16_t> RandomActs(int64_t m, int64_t k) {
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> x(m * k);
  for (auto& v : x) v = FloatToBf16(normal(rng));
  return x;
}

// Rotating copies of one N x K matrix (kept across benchmarks of the same shape).
struct WeightSet {
  std::vector<PackedFp8Matrix> copies;
  size_t next = 0;
  const PackedFp8Matrix& Next() { return copies[next++ % copies.size()]; }
};

WeightSet& Weights(int64_t n, int64_t k) {
  static std::vector<std::pair<std::pair<int64_t, int64_t>, std::unique_ptr<WeightSet>>> sets;
  for (auto& [shape, set] : sets) {
    if (shape == std::make_pair(n, k)) return *set;
  }
  auto set = std::make_unique<WeightSet>();
  set->copies.push_back(RandomPacked(n, k, 1));
  const size_t copies = bench::CopiesToDefeatCache(set->copies[0].StreamBytes());
  while (set->copies.size() < copies) set->copies.push_back(Clone(set->copies[0]));
  sets.emplace_back(std::make_pair(n, k), std::move(set));
  return *sets.back().second;
}

// ---- decode GEMV / GEMV-M: paired against plain reads ---------------------------------------

// Args: m, k, n.
void BM_Fp8GemvPaired(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  WeightSet& ws = Weights(n, k);
  const size_t bytes = static_cast<size_t>(ws.copies[0].StreamBytes());
  static std::unique_ptr<bench::PairedReader> reader;
  static size_t reader_bytes = 0;
  if (reader_bytes != bytes) {
    reader = std::make_unique<bench::PairedReader>(bytes);
    reader_bytes = bytes;
  }
  const std::vector<uint16_t> x = RandomActs(m, k);
  std::vector<uint16_t> out(m * n);
  ThreadPool& pool = ThreadPool::Default();
  bench::RunPaired(state, *reader, bytes, [&] {
    const Status s = Fp8GemmBf16(x.data(), m, ws.Next(), out.data(), pool);
    benchmark::DoNotOptimize(s);
  });
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * m * n * k * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
  state.counters["threads"] = pool.size();
}
BENCHMARK(BM_Fp8GemvPaired)
    ->ArgNames({"m", "k", "n"})
    ->Args({1, 5120, 8192})
    ->Args({1, 5120, 5120})
    ->Args({1, 5120, 1280})   // wq_a
    ->Args({1, 1280, 32768})  // wq_b
    ->Args({1, 5120, 512})    // wkv
    ->Args({1, 6144, 25600})  // engram wkv
    ->Args({2, 5120, 8192})
    ->Args({4, 5120, 8192})
    ->Args({8, 5120, 8192})
    ->UseManualTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(false)
    ->MinTime(2.0);

// ---- prefill GEMM: against the vdpbf16ps peak -----------------------------------------------

// Args: m, k, n, path (0 auto, 1 GEMV-M chunks, 2 panel GEMM). Weights from L3/DRAM as they come.
void BM_Fp8Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const auto path = static_cast<fp8_internal::Avx512Path>(state.range(3));
  if (path != fp8_internal::Avx512Path::kAuto && ActiveCpuLevel() != CpuLevel::kAvx512) {
    state.SkipWithError("AVX-512 path on a CPU without AVX-512");
    return;
  }
  // The host is shared: keep the best peak seen in this process (measured again right here).
  PeakGflops() = std::max(PeakGflops(), MeasureBf16Peak());
  const PackedFp8Matrix& w = Weights(n, k).copies[0];
  const std::vector<uint16_t> x = RandomActs(m, k);
  std::vector<uint16_t> xq(m * k), out(m * n);
  ThreadPool& pool = ThreadPool::Default();
  for (int64_t i = 0; i < m; ++i) QuantizeActScaledBf16(x.data() + i * k, k, xq.data() + i * k);
  const fp8_internal::OutView view{out.data(), n, OutDtype::kBf16};
  double total = 0.0;
  for (auto _ : state) {
    const double t0 = bench::NowSeconds();
    if (path == fp8_internal::Avx512Path::kAuto) {
      const Status s = Fp8GemmBf16(x.data(), m, w, out.data(), pool);  // includes act_quant
      benchmark::DoNotOptimize(s);
    } else {
      fp8_internal::Fp8GemmAvx512(xq.data(), m, k, w, view, pool, path);
    }
    const double dt = bench::NowSeconds() - t0;
    state.SetIterationTime(dt);
    total += dt;
  }
  const double gflops = 2.0 * m * n * k * state.iterations() / total * 1e-9;
  state.counters["GFLOPs"] = gflops;
  state.counters["peak_GFLOPs"] = PeakGflops();
  state.counters["pct_of_peak"] = 100.0 * gflops / PeakGflops();
  state.counters["threads"] = pool.size();
}
BENCHMARK(BM_Fp8Gemm)
    ->ArgNames({"m", "k", "n", "path"})
    ->Args({512, 5120, 8192, 0})
    ->Args({512, 5120, 8192, 1})
    ->Args({16, 5120, 8192, 1})
    ->Args({16, 5120, 8192, 2})
    ->Args({32, 5120, 8192, 1})
    ->Args({32, 5120, 8192, 2})
    ->Args({64, 5120, 8192, 1})
    ->Args({64, 5120, 8192, 2})
    ->Args({128, 5120, 8192, 1})
    ->Args({128, 5120, 8192, 2})
    ->Args({2048, 5120, 8192, 0})  // prefill: 2,048 rows, packed A beyond one row block
    ->Args({2048, 5120, 5120, 0})
    ->Args({2048, 8192, 5120, 0})   // wo_b at prefill
    ->Args({2048, 6144, 25600, 0})  // Engram wkv at prefill
    ->UseManualTime()
    ->MinTime(1.0);

}  // namespace
}  // namespace deepinfer::kernels
