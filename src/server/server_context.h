// What every route handler shares: the engine loop, the tokenizer, the metrics and the model's
// facts. Owned by Serve (http_server.h); outlives every connection.
#pragma once

#include <cstdint>
#include <string>

#include "api/structured_outputs.h"
#include "engine/sampling/sampling_params.h"
#include "server/engine_loop.h"
#include "server/metrics.h"
#include "server/pd_handoff.h"
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
  // Where each request's sampling starts: the served model's generation_config.json
  // (api/generation_config.h, `serve --generation-config`), else the engine's defaults.
  engine::SamplingParams sampling_defaults;
  // Compiles the structured-output fields of a request (ChatRequest::constraint) over the
  // model's vocabulary; null = no grammar support (such requests get 400). Used on the I/O
  // thread only.
  api::StructuredOutputs* structured = nullptr;

  // Prefill/decode disaggregation and the router (docs/disaggregation.md, GET /internal/info):
  // what must match for two instances to share pages or sit behind one router (model, page
  // layout, kernel level, index-key mode), this instance's role, its page length and key mode
  // (the router computes the same block keys), and the KV hand-off endpoint (null: none).
  std::string fingerprint;
  std::string role = "both";  // prefill | decode | both
  int64_t page_tokens = 0;
  bool prompt_sensitive = false;
  PdEndpoint* pd = nullptr;
};

}  // namespace deepinfer::server
