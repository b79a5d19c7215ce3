// What every route handler shares: the engine loop, the tokenizer, the metrics and the model's
// facts. Owned by Serve (http_server.h); outlives every connection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/engine_loop.h"
#include "server/metrics.h"
#include "structured/compiled_grammar.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {

struct ServerContext {
  EngineLoop* loop = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  Metrics* metrics = nullptr;
  std::string model_name;   // what /v1/models lists and requests may name
  int64_t max_context = 0;  // positions (prompt + output)
  int64_t vocab_size = 0;
  int32_t eos_id = 1;
  int64_t created = 0;  // unix time of the start
  // Compiles the structured-output fields of a request ({"response_format"} | {"regex"} |
  // {"grammar"}) over the model's vocabulary; empty = no grammar support.
  std::function<StatusOr<std::shared_ptr<const structured::CompiledGrammar>>(
      const nlohmann::json& constraint)>
      compile_grammar;
  std::optional<int32_t> think_end_id;  // the </think> token, when the tokenizer has one
};

}  // namespace deepinfer::server
