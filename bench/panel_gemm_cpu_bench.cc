// The FP8 and MXFP4 panel GEMMs (prefill shapes) on the calling thread, measured in CPU time
// against the `vdpbf16ps` peak loop run right before and after each call, so that the ratio holds
// on a loaded host where wall-clock time includes other processes' time slices:
//   pct_of_peak_cpu = median over calls of (call GFLOP / thread CPU-second) /
//                     (peak loop GFLOP / process CPU-second, mean of the two runs around it).
// The peak loop runs on the default pool; per CPU-second that is the one-thread peak whatever
// the pool size. Run with DEEPINFER_THREADS=1 so that no idle worker competes for the core:
//   DEEPINFER_THREADS=1 ./build/bench/panel_gemm_cpu_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bf16_peak.h"
#include "core/bf16.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/fp8_gemm.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "paired_bandwidth.h"

namespace deepinfer::kernels {
namespace {

double CpuSeconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// GFLOP per process CPU-second of one peak-loop run (~10 ms per thread).
double PeakPerCpuSecond() {
  const double w0 = bench::NowSeconds(), c0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const double gflops = bench::Bf16PeakGflopsOnce(800'000);
  const double wall = bench::NowSeconds() - w0;
  return gflops * wall / (CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - c0);
}

std::vector<uint16_t> QuantizedActivations(int64_t m, int64_t k) {
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> x(m * k), xq(m * k);
  for (auto& v : x) v = FloatToBf16(nd(rng));
  for (int64_t r = 0; r < m; ++r) QuantizeActScaledBf16Ref(x.data() + r * k, k, xq.data() + r * k);
  return xq;
}

// Times `call` (2·m·n·k flops) between two peak runs per iteration; reports medians.
template <typename Call>
void RunCpuPaired(benchmark::State& state, double flops, Call call) {
  std::vector<double> ratio, gflops;
  for (auto _ : state) {
    const double p0 = PeakPerCpuSecond();
    const double c0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    call();
    const double dc = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    const double p1 = PeakPerCpuSecond();
    gflops.push_back(flops / dc * 1e-9);
    ratio.push_back(100.0 * gflops.back() / (0.5 * (p0 + p1)));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  state.counters["GFLOP_per_cpu_s"] = median(gflops);
  state.counters["pct_of_peak_cpu"] = median(ratio);
}

void BM_Mxfp4PanelCpu(benchmark::State& state, int64_t n, int64_t k) {
  const int64_t m = state.range(0);
  std::mt19937 rng(5);
  std::vector<uint8_t> weight(n * k / 2), scale(n * k / 32);
  for (auto& b : weight) b = static_cast<uint8_t>(rng());
  for (auto& s : scale) s = static_cast<uint8_t>(119 + rng() % 5);
  const Mxfp4Source src{weight.data(), scale.data(), n};
  const PackedMxfp4Matrix w = PackedMxfp4Matrix::Pack({&src, 1}, k).value();
  const std::vector<uint16_t> xq = QuantizedActivations(m, k);
  std::vector<uint16_t> out(m * n);
  const Mxfp4Call c{w.view(), xq.data(), m, k, nullptr, out.data(), DType::kBF16, n};
  RunCpuPaired(state, 2.0 * m * n * k, [&] { Mxfp4PanelGemmAvx512(c, nullptr); });
}

void BM_Fp8PanelCpu(benchmark::State& state, int64_t n, int64_t k) {
  const int64_t m = state.range(0);
  std::mt19937 rng(7);
  std::vector<uint8_t> codes(n * k), scales(((n + 31) / 32) * (k / 32));
  for (auto& c : codes) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c = 0;  // no NaN codes
  }
  for (auto& s : scales) s = static_cast<uint8_t>(119 + rng() % 5);
  const PackedFp8Matrix w = PackFp8Matrix(codes.data(), scales.data(), n, k).value();
  const std::vector<uint16_t> xq = QuantizedActivations(m, k);
  std::vector<uint16_t> out(m * n);
  ThreadPool one(1);  // runs on the calling thread
  Fp8GemmParams p;
  p.x = xq.data();
  p.m = m;
  p.ldx = k;
  p.x_kind = ActKind::kQuantizedBf16;
  p.out = out.data();
  p.ldo = n;
  RunCpuPaired(state, 2.0 * m * n * k, [&] { (void)Fp8Gemm(p, w, one); });
}

// MoE prefill (~768 rows per expert for 2048 tokens, top-6 of 16): fused w1|w3 and w2.
BENCHMARK_CAPTURE(BM_Mxfp4PanelCpu, w13, 2 * 2304, 5120)->Arg(768)->Iterations(7);
BENCHMARK_CAPTURE(BM_Mxfp4PanelCpu, w2, 5120, 2304)->Arg(768)->Iterations(7);
// The FP8 kernel-table shape and a wo_a group (K 4096, N 1024) at 2048 rows.
BENCHMARK_CAPTURE(BM_Fp8PanelCpu, n8192_k5120, 8192, 5120)->Arg(512)->Iterations(5);
BENCHMARK_CAPTURE(BM_Fp8PanelCpu, wo_a, 1024, 4096)->Arg(2048)->Iterations(5);

}  // namespace
}  // namespace deepinfer::kernels
