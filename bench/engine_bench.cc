// Engine throughput with asynchronous scheduling on and off, on a small model with the real
// tokenizer (the bundled default model: scripts/default-model.sh makes build/default-model).
//
//   DEEPINFER_ENGINE_BENCH_MODEL=build/default-model build/release/bench/engine_bench
//
// Each iteration runs 16 requests (32-token prompts, 32 output tokens, temperature 1) to the end
// through a fresh engine (prefix cache off), with every token streamed through a detokenizer with
// a stop string, as the server does; /structured:1 adds a json_object grammar, whose masks are
// the other work asynchronous scheduling overlaps with the forward call. Counters: generated
// tokens per second and steps per second. BM_EngineSpec: DSpark speculative decoding on and off.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "api/request_text.h"
#include "api/structured_outputs.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "tools/engine_setup.h"

namespace deepinfer {
namespace {

tools::LoadedEngine* Loaded() {
  static tools::LoadedEngine* loaded = [] {
    const char* dir = std::getenv("DEEPINFER_ENGINE_BENCH_MODEL");
    if (dir == nullptr) return static_cast<tools::LoadedEngine*>(nullptr);
    tools::EngineFlags flags;
    flags.kv_budget = "256M";
    auto e = tools::LoadEngine(dir, "", flags);
    if (!e.ok()) {
      std::fprintf(stderr, "engine_bench: %s\n", e.status().ToString().c_str());
      return static_cast<tools::LoadedEngine*>(nullptr);
    }
    return new tools::LoadedEngine(std::move(*e));
  }();
  return loaded;
}

void BM_EngineThroughput(benchmark::State& state) {
  tools::LoadedEngine* le = Loaded();
  if (le == nullptr || !le->tokenizer) {
    state.SkipWithError("set DEEPINFER_ENGINE_BENCH_MODEL to a model folder with a tokenizer");
    return;
  }
  const bool async = state.range(0) != 0, structured = state.range(1) != 0;
  const int n_requests = 16, prompt_len = 32, max_tokens = 32;
  const int64_t vocab = le->model->config().vocab_size;
  int64_t tokens = 0, steps = 0;
  double step_s = 0, forward_s = 0, spec_s = 0;
  for (auto _ : state) {
    state.PauseTiming();
    engine::DeepSeekRunnerOptions ro;
    auto runner = engine::DeepSeekRunner::Create(le->model.get(), ro);
    engine::EngineOptions eo;
    eo.kv_budget_bytes = int64_t{256} << 20;
    eo.prefix_cache = false;
    eo.async_schedule = async;
    auto engine = engine::Engine::Create(runner->get(), eo, &le->model->pool());
    if (!runner.ok() || !engine.ok()) {
      state.SkipWithError("engine setup failed");
      return;
    }
    std::mt19937 rng(1);
    for (int i = 0; i < n_requests; ++i) {
      engine::Request r;
      for (int k = 0; k < prompt_len; ++k) {
        r.prompt.push_back(static_cast<int32_t>(1000 + rng() % (vocab - 2000)));
      }
      r.params.temperature = 1.0f;
      r.params.seed = static_cast<uint64_t>(i);
      r.params.max_tokens = max_tokens;
      r.params.ignore_eos = true;
      r.params.stop = {"\n\n###"};
      const nlohmann::json body =
          structured ? nlohmann::json{{"response_format", {{"type", "json_object"}}}}
                     : nlohmann::json::object();
      if (!api::AttachGrammar(le->structured.get(), body, false, &r).ok() ||
          !api::RequestText::Attach(le->tokenizer.get(), true, &r).ok()) {
        state.SkipWithError("request setup failed");
        return;
      }
      r.on_output = [&tokens](const engine::RequestOutput& o) {
        tokens += static_cast<int64_t>(o.new_tokens.size());
      };
      if (!(*engine)->Add(std::move(r)).ok()) {
        state.SkipWithError("Add failed");
        return;
      }
    }
    state.ResumeTiming();
    if (!(*engine)->RunUntilIdle().ok()) {
      state.SkipWithError("run failed");
      return;
    }
    const engine::EngineStats st = (*engine)->stats();
    steps += st.steps;
    step_s += st.step_seconds;
    forward_s += st.forward_seconds;
    spec_s += st.spec_seconds;
  }
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  // The engine's own accounting: the share of step time outside the forward call (scheduling,
  // sampling, grammar masks and deliveries not hidden behind the forward), and forward ms per
  // step. Comparable between configurations whose requests end at different lengths.
  state.counters["sched_share_pct"] = 100.0 * engine::SchedulingFraction(step_s, forward_s, spec_s);
  state.counters["forward_ms_per_step"] =
      steps > 0 ? 1e3 * forward_s / static_cast<double>(steps) : 0;
}

BENCHMARK(BM_EngineThroughput)
    ->ArgNames({"async", "structured"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Speculative decoding with the model's DSpark heads: spec = 0 off, 1 the cost-model scheduler
// (--spec-policy cost), 2 every draft verified (fixed), 3 threshold 0.5; `requests` concurrent
// requests (32-token prompts, 64 output tokens, greedy, prefix cache off). Counters: tokens/s,
// steps/s, accepted drafts per verified draft (`acceptance`) and per generated token.
void BM_EngineSpec(benchmark::State& state) {
  tools::LoadedEngine* le = Loaded();
  if (le == nullptr) {
    state.SkipWithError("set DEEPINFER_ENGINE_BENCH_MODEL to a model folder");
    return;
  }
  const int mode = static_cast<int>(state.range(0));
  const int n_requests = static_cast<int>(state.range(1));
  const int prompt_len = 32, max_tokens = 64;
  const int64_t vocab = le->model->config().vocab_size;
  int64_t tokens = 0, steps = 0, verified = 0, accepted = 0, drafted = 0;
  for (auto _ : state) {
    state.PauseTiming();
    engine::DeepSeekRunnerOptions ro;
    auto runner = engine::DeepSeekRunner::Create(le->model.get(), ro);
    engine::EngineOptions eo;
    eo.kv_budget_bytes = int64_t{256} << 20;
    eo.prefix_cache = false;
    if (mode > 0) {
      eo.spec.mode = engine::spec::SpecMode::kDSpark;
      eo.spec.policy = mode == 1   ? engine::spec::SpecPolicy::kCostModel
                       : mode == 2 ? engine::spec::SpecPolicy::kFixed
                                   : engine::spec::SpecPolicy::kThreshold;
    }
    if (!runner.ok()) {
      state.SkipWithError("runner setup failed");
      return;
    }
    auto engine = engine::Engine::Create(runner->get(), eo, &le->model->pool());
    if (!engine.ok()) {
      state.SkipWithError(engine.status().ToString().c_str());
      return;
    }
    std::mt19937 rng(1);
    for (int i = 0; i < n_requests; ++i) {
      engine::Request r;
      for (int k = 0; k < prompt_len; ++k) {
        r.prompt.push_back(static_cast<int32_t>(1000 + rng() % (vocab - 2000)));
      }
      r.params.temperature = 0.0f;
      r.params.max_tokens = max_tokens;
      r.params.ignore_eos = true;
      r.on_output = [&tokens](const engine::RequestOutput& o) {
        tokens += static_cast<int64_t>(o.new_tokens.size());
      };
      if (!(*engine)->Add(std::move(r)).ok()) {
        state.SkipWithError("Add failed");
        return;
      }
    }
    state.ResumeTiming();
    if (!(*engine)->RunUntilIdle().ok()) {
      state.SkipWithError("run failed");
      return;
    }
    const engine::EngineStats st = (*engine)->stats();
    steps += st.steps;
    verified += st.spec.verified;
    accepted += st.spec.accepted;
    drafted += st.spec.drafted;
  }
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["acceptance"] =
      verified > 0 ? static_cast<double>(accepted) / static_cast<double>(verified) : 0.0;
  state.counters["verified_per_token"] =
      tokens > 0 ? static_cast<double>(verified) / static_cast<double>(tokens) : 0.0;
  state.counters["drafted_per_token"] =
      tokens > 0 ? static_cast<double>(drafted) / static_cast<double>(tokens) : 0.0;
}

BENCHMARK(BM_EngineSpec)
    ->ArgNames({"spec", "requests"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 16}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace deepinfer
