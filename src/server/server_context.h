// What every route handler shares: the engine loop, the tokenizer, the metrics and the model's
// facts. Owned by Serve (http_server.h); outlives every connection.
#pragma once

#include <cstdint>
#include <string>

#include "api/structured_outputs.h"
#include "server/engine_loop.h"
#include "server/metrics.h"
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
  // Compiles the structured-output fields of a request (ChatRequest::constraint) over the
  // model's vocabulary; null = no grammar support (such requests get 400). Used on the I/O
  // thread only.
  api::StructuredOutputs* structured = nullptr;
};

}  // namespace deepinfer::server
