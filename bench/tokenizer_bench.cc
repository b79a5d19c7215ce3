// Tokenizer encode speed on one core, in bytes of input text per second (bytes_per_second).
//   build/release/bench/tokenizer_bench
// Corpora (about 1 MiB each, generated, deterministic):
//   Prose    English text and code: words repeat, so most BPE work is served by the word cache;
//   Unique   random lowercase words, almost all distinct: the pre-tokenizer plus BPE merges
//            without cache help (the cache fills and then stops inserting);
//   Mixed    prose with CJK, emoji, digits and whitespace runs.
// The tokenizer directory is DEEPINFER_TOKENIZER_DIR (scripts/install-deps.sh installs it).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "tokenizer/tokenizer.h"

namespace {

using deepinfer::tokenizer::Tokenizer;

const Tokenizer* Tok() {
  static const Tokenizer* tok = [] {
    auto loaded = Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tokenizer_bench: %s\n", loaded.status().ToString().c_str());
      std::exit(1);
    }
    return std::move(loaded).value().release();
  }();
  return tok;
}

constexpr size_t kCorpusBytes = 1 << 20;

std::string Prose() {
  const std::string para =
      "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
      "age of foolishness. The quick brown fox jumps over the lazy dog; don't you think? "
      "def encode(self, text: str) -> list[int]:\n    return [self.vocab[t] for t in "
      "self.split(text)]\n\nfor (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n"
      "See https://example.com/docs/v2/index.html#section-3 for 1,234 more examples (2024).\n";
  std::string s;
  while (s.size() < kCorpusBytes) s += para;
  return s;
}

std::string Unique() {
  std::mt19937 rng(7);
  std::string s;
  while (s.size() < kCorpusBytes) {
    const int n = 3 + static_cast<int>(rng() % 9);
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + rng() % 26));
    s.push_back(rng() % 10 == 0 ? '\n' : ' ');
  }
  return s;
}

std::string Mixed() {
  const std::string para =
      "Hello world! 你好，世界。日本語のテキストとカタカナ。한국어 문장입니다. "
      "😀👍🏽 "
      "Numbers 3.14159 and 1234567890, tabs\t\tand   spaces\n\n  indented line; café naïve.\n";
  std::string s;
  while (s.size() < kCorpusBytes) s += para;
  return s;
}

void RunEncode(benchmark::State& state, const std::string& text) {
  const Tokenizer* tok = Tok();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(text);
    if (!ids.ok()) state.SkipWithError(ids.status().message().c_str());
    n_tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / n_tokens;
}

void BM_EncodeProse(benchmark::State& state) { RunEncode(state, Prose()); }
void BM_EncodeUnique(benchmark::State& state) { RunEncode(state, Unique()); }
void BM_EncodeMixed(benchmark::State& state) { RunEncode(state, Mixed()); }

BENCHMARK(BM_EncodeProse)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncodeUnique)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncodeMixed)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
