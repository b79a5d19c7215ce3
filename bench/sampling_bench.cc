// Sampler cost per batch at the DeepSeek-V4.1 vocabulary (129,280), rows spread over the default
// thread pool (DEEPINFER_THREADS). Time is wall-clock ms per batch.
//   build-sampler/bench/sampling_bench
// Modes:
//   Greedy     temperature 0 (no logprobs: argmax only);
//   GreedyLp   temperature 0 with logprobs (log_softmax, an extra exp pass);
//   TopP       temperature 1, top_p 0.9 on "LLM-like" logits: N(0, 2) plus 30 tokens raised by 9,
//              so the top-p set is a few thousand tokens (harder than a typical peaked row);
//   TopPFlat   temperature 1, top_p 0.9 on N(0, 1) logits: the top-p set is ~70% of the
//              vocabulary, the worst case for the candidate pruning;
//   Full       temperature 1 without truncation (the OpenAI default) on the LLM-like logits.
// The budget: <= 5% of a decode step, i.e. <= 50 ms for 64 rows (aim: < 10 ms).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/sampling/sampler.h"

namespace {

using deepinfer::engine::SampleBatch;
using deepinfer::engine::SampleResult;
using deepinfer::engine::SampleRow;
using deepinfer::engine::SamplingParams;

constexpr int64_t kVocab = 129280;

enum Mode { kGreedy, kTopP, kTopPFlat, kFull, kGreedyLogprobs };

std::vector<float> Logits(int64_t rows, bool flat) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, flat ? 1.0f : 2.0f);
  std::vector<float> x(rows * kVocab);
  for (auto& v : x) v = normal(rng);
  if (!flat) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int i = 0; i < 30; ++i) x[r * kVocab + rng() % kVocab] += 9.0f;
    }
  }
  return x;
}

void BM_SampleBatch(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const auto mode = static_cast<Mode>(state.range(1));
  const std::vector<float> logits = Logits(rows, mode == kTopPFlat);
  SamplingParams params;
  params.temperature = mode == kGreedy || mode == kGreedyLogprobs ? 0.0f : 1.0f;
  params.logprobs = mode == kGreedyLogprobs;
  params.top_p = mode == kTopP || mode == kTopPFlat ? 0.9f : 1.0f;
  std::vector<SampleRow> batch(rows);
  for (int64_t r = 0; r < rows; ++r) {
    batch[r].logits = logits.data() + r * kVocab;
    batch[r].params = &params;
    batch[r].seed = 42 + r;
  }
  std::vector<SampleResult> out(rows);
  int64_t position = 0;
  for (auto _ : state) {
    for (auto& row : batch) row.position = position;
    ++position;
    for (const deepinfer::Status& st : SampleBatch(batch, kVocab, out)) {
      if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(mode == kGreedy           ? "greedy"
                 : mode == kGreedyLogprobs ? "greedy+logprobs"
                 : mode == kTopP           ? "top_p=0.9"
                 : mode == kTopPFlat       ? "top_p=0.9 flat"
                                           : "temperature=1 full");
}

BENCHMARK(BM_SampleBatch)
    ->ArgsProduct({{1, 64}, {kGreedy, kGreedyLogprobs, kTopP, kTopPFlat, kFull}})
    ->ArgNames({"batch", "mode"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
