// FillNextTokenBitmask at the model's vocabulary (129,280 rows, the DeepSeek-V3 tokenizer) for
// a tool-call schema: a walk of tokens is generated once (fixed seed: random tokens, then the
// shortest completion), then replayed with a fresh matcher per iteration (a new request on an
// already-compiled, cache-warm grammar); every mask is timed. Counters: median and p99 per
// token in microseconds, and the first replay's (cold mask cache) median and max. The second
// argument is the compile-time precompute budget in milliseconds (GrammarCompiler::
// set_precompute_seconds; 0: every entry built on first use); compile_ms is the compile call.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "structured/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace {

using deepinfer::structured::GrammarCompiler;
using deepinfer::structured::GrammarMatcher;
using deepinfer::structured::Vocabulary;

constexpr const char* kToolSchema = R"({
  "type": "object",
  "properties": {
    "title": {"type": "string", "maxLength": 60},
    "start": {"type": "string", "format": "date-time"},
    "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480},
    "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 4},
    "location": {"type": "string"},
    "priority": {"enum": ["low", "normal", "high"]},
    "online": {"type": "boolean"},
    "notes": {"type": ["string", "null"]}
  },
  "required": ["title", "start", "duration_minutes", "attendees", "location", "priority"],
  "additionalProperties": false
})";

std::vector<int32_t> MakeWalk(
    const std::shared_ptr<const deepinfer::structured::CompiledGrammar>& g, int budget) {
  GrammarMatcher m(g);
  const Vocabulary& v = g->vocabulary();
  std::vector<uint32_t> mask(v.n_words());
  std::mt19937 rng(42);
  std::vector<int32_t> walk;
  while (!m.IsTerminated() && walk.size() < 2000) {
    m.FillNextTokenBitmask(mask.data());
    std::vector<int32_t> allowed;
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint32_t b = mask[w]; b; b &= b - 1) {
        allowed.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(b)));
      }
    }
    CHECK(!allowed.empty());
    int32_t pick = allowed[rng() % allowed.size()];
    if (static_cast<int>(walk.size()) >= budget) {
      int64_t best = INT64_MAX;
      std::vector<int32_t> cand;
      for (int32_t id : allowed) {
        if (v.IsStop(id) || v.bytes(id).size() <= 2) cand.push_back(id);
      }
      for (int32_t id : cand) {
        CHECK(m.AcceptToken(id));
        const int64_t c = m.IsTerminated() ? -1 : m.MinCompletionBytes();
        m.Rollback(1);
        if (c < best) best = c, pick = id;
      }
    }
    CHECK(m.AcceptToken(pick));
    walk.push_back(pick);
  }
  return walk;
}

std::vector<double> Replay(const std::shared_ptr<const deepinfer::structured::CompiledGrammar>& g,
                           const std::vector<int32_t>& walk) {
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(g->vocabulary().n_words());
  std::vector<double> us;
  for (int32_t t : walk) {
    const auto t0 = std::chrono::steady_clock::now();
    m.FillNextTokenBitmask(mask.data());
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(mask.data());
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    CHECK(m.AcceptToken(t));
  }
  return us;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

// A form with 38 bounded strings (maxLength 256): issue 25's slow real-world shape.
std::string ManyBoundedStrings() {
  std::string props, req;
  for (int i = 0; i < 38; ++i) {
    const std::string name = "field_" + std::to_string(i);
    props += (i ? ", \"" : "\"") + name + R"(": {"type": "string", "maxLength": 256})";
    req += (i ? ", \"" : "\"") + name + "\"";
  }
  return R"({"type": "object", "properties": {)" + props + "}, \"required\": [" + req +
         "], \"additionalProperties\": false}";
}

void RunMaskBench(benchmark::State& state, const std::string& schema) {
  auto tok = deepinfer::tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
  CHECK(tok.ok()) << tok.status().ToString();
  auto vocab = Vocabulary::FromTokenizer(**tok, 129280).value();
  GrammarCompiler compiler(vocab);
  compiler.set_precompute_seconds(static_cast<double>(state.range(1)) * 1e-3);
  // The walk is generated on its own compiled grammar, so the measured one starts cold.
  auto walk = MakeWalk(GrammarCompiler(vocab).CompileJsonSchema(schema).value(),
                       static_cast<int>(state.range(0)));
  const auto c0 = std::chrono::steady_clock::now();
  auto g = compiler.CompileJsonSchema(schema).value();
  state.counters["compile_ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
  const std::vector<double> cold = Replay(g, walk);
  std::vector<double> all;
  for (auto _ : state) {
    std::vector<double> us = Replay(g, walk);
    all.insert(all.end(), us.begin(), us.end());
  }
  state.counters["tokens"] = static_cast<double>(walk.size());
  state.counters["median_us"] = Quantile(all, 0.5);
  state.counters["p99_us"] = Quantile(all, 0.99);
  state.counters["cold_median_us"] = Quantile(cold, 0.5);
  state.counters["cold_p99_us"] = Quantile(cold, 0.99);
  state.counters["cold_max_us"] = Quantile(cold, 1.0);
  state.counters["cache_entries"] = static_cast<double>(g->n_entries());
  state.counters["derived_entries"] = static_cast<double>(g->n_derived_entries());
}

void BM_ToolCallMask(benchmark::State& state) { RunMaskBench(state, kToolSchema); }
BENCHMARK(BM_ToolCallMask)
    ->ArgsProduct({{40, 150}, {0, 1000}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_BoundedStringsMask(benchmark::State& state) { RunMaskBench(state, ManyBoundedStrings()); }

// The schema corpus (tests/structured/data/schemas.jsonl: 71 shapes of real requests), each
// compiled by a fresh compiler with the precompute budget of the argument (ms), then one walk
// (40 random tokens, then the shortest completion) replayed on it: what a schema's first request
// sees. Counters over all schemas: compile time p50 / p99 / max (ms) and how many finished their
// precompute; mask time over every token of every first request, p50 / p99 / max (µs).
void BM_CorpusFirstRequest(benchmark::State& state) {
  auto tok = deepinfer::tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
  CHECK(tok.ok()) << tok.status().ToString();
  auto vocab = Vocabulary::FromTokenizer(**tok, 129280).value();
  std::vector<std::string> schemas;
  std::ifstream in(std::string(DEEPINFER_SOURCE_DIR) + "/tests/structured/data/schemas.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) schemas.push_back(nlohmann::json::parse(line)["schema"].dump());
  }
  CHECK(!schemas.empty());
  // The walks, made once per process on grammars of their own (the measured ones start cold).
  static std::map<std::string, std::vector<int32_t>> walks;
  for (const std::string& schema : schemas) {
    if (!walks.contains(schema)) {
      walks[schema] = MakeWalk(GrammarCompiler(vocab).CompileJsonSchema(schema).value(), 40);
    }
  }
  std::vector<double> compile_ms, mask_us;
  double complete = 0;
  for (auto _ : state) {
    for (const std::string& schema : schemas) {
      GrammarCompiler compiler(vocab);
      compiler.set_precompute_seconds(static_cast<double>(state.range(0)) * 1e-3);
      const auto c0 = std::chrono::steady_clock::now();
      auto g = compiler.CompileJsonSchema(schema).value();
      compile_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count());
      if (state.range(0) > 0 && g->Precompute(0.0).complete) ++complete;
      const std::vector<double> us = Replay(g, walks[schema]);
      mask_us.insert(mask_us.end(), us.begin(), us.end());
    }
  }
  state.counters["schemas"] = static_cast<double>(schemas.size());
  state.counters["precomputed"] = complete / static_cast<double>(state.iterations());
  state.counters["compile_p50_ms"] = Quantile(compile_ms, 0.5);
  state.counters["compile_p99_ms"] = Quantile(compile_ms, 0.99);
  state.counters["compile_max_ms"] = Quantile(compile_ms, 1.0);
  state.counters["mask_p50_us"] = Quantile(mask_us, 0.5);
  state.counters["mask_p99_us"] = Quantile(mask_us, 0.99);
  state.counters["mask_max_us"] = Quantile(mask_us, 1.0);
}
BENCHMARK(BM_CorpusFirstRequest)->Arg(0)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_BoundedStringsMask)
    ->ArgsProduct({{150}, {0, 1000}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
