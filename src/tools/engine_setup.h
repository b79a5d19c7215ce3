// What the commands that run the engine share (generate, serve and bench/engine_bench): the
// engine flags and loading a model folder with its tokenizer. A request's grammar and text go
// through the api layer (api/structured_outputs.h, api/request_text.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/structured_outputs.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "model/deepseek_v41/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/context_parallel_setup.h"
#include "tools/expert_parallel_setup.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's own namespace
class App;
}  // namespace CLI

namespace deepinfer::tools {

struct EngineFlags {
  std::string kv_budget = "2G";  // bytes, or with a K/M/G suffix
  int64_t max_running = 64;
  int64_t prefill_chunk = 512;
  int64_t max_batch_tokens = 2048;
  std::string prefix_cache = "on";
  std::string async_schedule = "on";
  std::string mode = "official";  // index-key mode
  int64_t page_tokens = 0;        // 0 = default
  // Decoder-side bounded replay: off, on (window + 12 rows, DeepInfer's 140 at the released
  // window of 128) or a row count; an approximation, so not with the prefix cache.
  std::string decoder_replay = "off";
  // Speculative decoding (engine/spec/): --spec dspark|off, --spec-policy cost|fixed|threshold,
  // --spec-length (fixed; 0 = the whole draft block), --spec-threshold.
  std::string spec = "off";
  std::string spec_policy = "cost";
  int64_t spec_length = 0;
  double spec_threshold = 0.5;
  // --spec-draft-vocab: the ids drafts are ranked over (model/deepseek_v41/draft_vocab.h):
  // auto (the model folder's dspark_draft_vocab.json when there is one, else all), all, or a
  // file.
  std::string spec_draft_vocab = "auto";
  // --spec-draft-sampling: coupled (sampled requests draft with their own uniforms) or greedy.
  std::string spec_draft_sampling = "coupled";
  // Scale-out under mpirun (docs/scaleout.md): MoE expert parallelism over the ranks (on/off),
  // EPLB every eplb_interval steps (0 = off) with eplb_redundant extra expert copies per layer.
  std::string expert_parallel = "on";
  int64_t eplb_interval = 0;
  int64_t eplb_redundant = 0;
  // Context parallelism under mpirun (engine/context_parallel_prefill.h): off, on (every
  // prompt) or auto (prompts of at least context_parallel_min_tokens tokens), k chunks per rank.
  std::string context_parallel = "off";
  int64_t context_parallel_min_tokens = 4096;
  int context_parallel_chunks = 4;
  std::string check_integrity = "off";  // KvCacheManager / engine invariants after every step
  // JSON Schema constraints: on (no keys beyond the listed ones unless additionalProperties
  // allows them) or off (an absent additionalProperties allows any key, as the spec says).
  std::string json_schema_strict = "on";
  // Each newly compiled grammar builds its mask entries ahead of use for up to this long
  // (structured::CompiledGrammar::Precompute; 0: on first use only).
  int64_t grammar_precompute_ms = 1000;

  // Every flag and its value, one string (ranks compare theirs at start).
  std::string Describe() const;
};

// Adds the engine flags above to a command (engine_flags.cc).
void AddEngineFlags(CLI::App* cmd, EngineFlags* flags);
// --json-schema-strict on|off (serve, generate, grammar-check).
void AddJsonSchemaStrictFlag(CLI::App* cmd, std::string* value);
StatusOr<int64_t> ParseBytes(const std::string& text);
// --decoder-replay: rows kept (0 = off) for a model whose window is `window`.
StatusOr<int64_t> DecoderReplayRows(const std::string& flag, int64_t window);

// A loaded model folder: the tokenizer (when the folder or --tokenizer has one), the model, its
// runner and the engine.
struct LoadedEngine {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<engine::DeepSeekRunner> runner;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<api::StructuredOutputs> structured;  // with a tokenizer only
  // Expert parallelism under mpirun (expert_parallel_setup.h); null otherwise.
  std::unique_ptr<dist::MpiExpertExchange> experts;
  // Context parallelism under mpirun (context_parallel_setup.h); null otherwise.
  std::unique_ptr<ContextParallelSetup> context;

  // The draft vocabulary in use ("" = the whole vocabulary; else the file it came from).
  std::string draft_vocab_source;

  // Runs the engine until every request is done (and, expert parallel, every rank's).
  Status RunUntilIdle() { return RunEngineUntilIdle(*engine, experts.get()); }
};

StatusOr<LoadedEngine> LoadEngine(const std::string& model_dir, const std::string& tokenizer_dir,
                                  const EngineFlags& flags);

}  // namespace deepinfer::tools
