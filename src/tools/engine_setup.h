// What the commands that run the engine share (generate, later serve and bench): loading a model
// folder with its tokenizer, the engine flags, and turning a request into text as it streams.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "model/deepseek_v41/model.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tools/structured_request.h"

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
};

// Adds the engine flags above to a command (engine_flags.cc).
void AddEngineFlags(CLI::App* cmd, EngineFlags* flags);
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
  std::unique_ptr<StructuredOutputs> structured;  // with a tokenizer only
};

StatusOr<LoadedEngine> LoadEngine(const std::string& model_dir, const std::string& tokenizer_dir,
                                  const EngineFlags& flags);

// The text side of one request: stop strings through a streaming detokenizer, the text so far.
struct TextStream {
  std::optional<tokenizer::StreamingDetokenizer> detok;
  std::string text;
  bool stop_string_hit = false;
};

// Sets request->grammar from the structured-output fields of `body` (structured_request.h);
// `thinking`: the constraint starts after `</think>`.
Status AttachGrammar(const LoadedEngine& e, const nlohmann::json& body, bool thinking,
                     engine::Request* request);

// Wires `stream` into `request` (stop strings, text accumulation); with no tokenizer, stop
// strings are an error.
Status AttachTextStream(const tokenizer::Tokenizer* tok, engine::Request* request,
                        const std::shared_ptr<TextStream>& stream);

}  // namespace deepinfer::tools
