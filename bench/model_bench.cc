// Whole-model benchmarks on a checkpoint at the released per-layer shapes (docs/performance.md):
//   BM_Decode:  one batch-1 decode step after a 256-token prompt (16: for phase profiles, where
//               the prompt's prefill should not dominate the totals), paired with a plain read of
//               the weight bytes the step streams (cost_model.h) -> pct_of_read = bandwidth bound
//               use.
//   BM_Prefill: a 2048-token prefill from position 0 -> GFLOP/s (cost_model.h) and pct_of_peak
//               against the vdpbf16ps peak measured in the same process; and the same per
//               CPU-second of the process (pct_of_peak_cpu: GFLOP per CPU-second of the forward
//               over the peak loop's, measured right before and after), which time slicing on a
//               loaded host does not distort. With DEEPINFER_THREADS=1 that is the one-thread
//               efficiency; with more threads the pool's spin-waits count as CPU time too.
// The model folder comes from DEEPINFER_BENCH_MODEL, e.g. one written by
//   deepinfer make-checkpoint --config bench/configs/v41_released_shapes_4l.json --out DIR --seed 1
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "model/deepseek_v41/cost_model.h"
#include "model/deepseek_v41/model.h"
#include "paired_bandwidth.h"

namespace deepinfer::model {
namespace {

Model* LoadBenchModel(benchmark::State& state) {
  static std::unique_ptr<Model> model;
  if (model) return model.get();
  const char* dir = std::getenv("DEEPINFER_BENCH_MODEL");
  if (dir == nullptr) {
    state.SkipWithError("set DEEPINFER_BENCH_MODEL to a model folder");
    return nullptr;
  }
  auto m = Model::Load(dir);
  if (!m.ok()) {
    state.SkipWithError(m.status().ToString().c_str());
    return nullptr;
  }
  model = std::move(*m);
  return model.get();
}

std::vector<int32_t> RandomTokens(const Model& m, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(2, m.config().vocab_size - 1);
  std::vector<int32_t> t(n);
  for (auto& v : t) v = dist(rng);
  return t;
}

void BM_Decode(benchmark::State& state) {
  Model* m = LoadBenchModel(state);
  if (!m) return;
  const int64_t prompt = state.range(0);
  SequenceState seq = m->NewSequence();
  const auto tokens = RandomTokens(*m, prompt + 4096, 7);
  ForwardOptions opt;
  ForwardOutput out;
  ForwardInput in{&seq, std::span<const int32_t>(tokens).first(prompt)};
  if (!m->Forward(std::span(&in, 1), opt, &out).ok()) {
    state.SkipWithError("prefill failed");
    return;
  }
  const int64_t bytes = DecodeWeightBytesPerToken(*m);
  bench::PairedReader reader(static_cast<size_t>(bytes));
  size_t next = static_cast<size_t>(prompt);
  bench::RunPaired(state, reader, static_cast<size_t>(bytes), [&] {
    ForwardInput step{&seq, std::span<const int32_t>(tokens).subspan(next++, 1)};
    Status s = m->Forward(std::span(&step, 1), opt, &out);
    benchmark::DoNotOptimize(s.ok());
  });
  state.counters["weight_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_Decode)
    ->Arg(16)
    ->Arg(256)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(16);

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The peak loop's GFLOP per CPU-second of the process (its wall-clock GFLOP/s times wall / CPU).
double PeakGflopsPerCpuSecond() {
  const double w0 = bench::NowSeconds(), c0 = ProcessCpuSeconds();
  const double gflops = bench::Bf16PeakGflopsOnce(2'000'000);
  const double wall = bench::NowSeconds() - w0, cpu = ProcessCpuSeconds() - c0;
  return gflops * wall / cpu;
}

void BM_Prefill(benchmark::State& state) {
  Model* m = LoadBenchModel(state);
  if (!m) return;
  const int64_t n = state.range(0);
  const auto tokens = RandomTokens(*m, n, 11);
  const double peak = bench::MeasureBf16PeakGflops();
  const double flops = PrefillFlops(*m, n);
  double total = 0, cpu_total = 0, cpu_peak = 0;
  for (auto _ : state) {
    SequenceState seq = m->NewSequence();
    ForwardInput in{&seq, tokens};
    ForwardOutput out;
    const double peak_before = PeakGflopsPerCpuSecond();
    const double t0 = bench::NowSeconds(), c0 = ProcessCpuSeconds();
    Status s = m->Forward(std::span(&in, 1), {}, &out);
    const double dt = bench::NowSeconds() - t0, dc = ProcessCpuSeconds() - c0;
    cpu_peak += 0.5 * (peak_before + PeakGflopsPerCpuSecond());
    benchmark::DoNotOptimize(s.ok());
    state.SetIterationTime(dt);
    total += dt;
    cpu_total += dc;
  }
  const double gflops = flops * static_cast<double>(state.iterations()) / total * 1e-9;
  state.counters["GFLOPs"] = gflops;
  state.counters["peak_GFLOPs"] = peak;
  state.counters["pct_of_peak"] = 100.0 * gflops / peak;
  state.counters["tok_per_s"] = static_cast<double>(n * state.iterations()) / total;
  const double per_cpu_s = flops * static_cast<double>(state.iterations()) / cpu_total * 1e-9;
  const double peak_cpu = cpu_peak / static_cast<double>(state.iterations());
  state.counters["cpu_s"] = cpu_total / static_cast<double>(state.iterations());
  state.counters["GFLOP_per_cpu_s"] = per_cpu_s;
  state.counters["peak_per_cpu_s"] = peak_cpu;
  state.counters["pct_of_peak_cpu"] = 100.0 * per_cpu_s / peak_cpu;
}
BENCHMARK(BM_Prefill)->Arg(2048)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace deepinfer::model
