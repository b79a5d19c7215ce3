// RankWorker: a rank other than 0 of a server over MPI ranks (rank_hub.h is rank 0's side).
// Its engine runs the requests rank 0 placed here: each arrives as a RemoteRequest and becomes
// the engine::Request rank 0's GenerationSession would have made (the grammar compiled from the
// structured-output fields, the stop strings checked by this rank's own api::RequestText); its
// verdict and outputs go back at the next exchange. KV hand-offs rank 0 placed here (a decode
// instance over ranks, server/pd_handoff.h) are imported between steps, checked against this
// rank's own fingerprint, and their results go back the same way. The serving loop
// (tools/cmd_serve.cc) steps the engine, ends the step with the expert exchange (if any), then
// calls Exchange: once per step, as rank 0 does.
//
// Threads: the serving loop's thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "api/structured_outputs.h"
#include "core/status.h"
#include "engine/engine.h"
#include "server/rank_wire.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {

struct RankWorkerOptions {
  engine::Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  api::StructuredOutputs* structured = nullptr;  // null: constrained requests are refused
  // Swaps one text with rank 0 (dist::MpiWorld::ExchangeWithRoot: one entry out, one in).
  std::function<std::vector<std::string>(const std::vector<std::string>&)> exchange;
  std::function<RankSnapshot()> describe;
  std::string fingerprint;  // tools/instance_fingerprint.h: what an imported bundle must carry
  // This rank's part of a context-parallel prefill (engine/context_parallel_prefill.h); null:
  // the instance does not split prompts.
  std::function<void(const ContextJob& job)> prefill;
};

class RankWorker {
 public:
  explicit RankWorker(RankWorkerOptions options) : options_(std::move(options)) {}

  // Sends what happened since the last exchange, adds the requests that came and applies the
  // cancels. Returns false once rank 0 said stop; DataLoss on a malformed message.
  StatusOr<bool> Exchange();

 private:
  void Add(RemoteRequest remote);
  void Import(const RemotePages& pages);

  RankWorkerOptions options_;
  FromRank outbox_;
  // Cancel flags of the requests in the engine, by rank 0's id (dropped as they finish).
  std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> live_;
  std::map<uint64_t, int> samples_left_;
};

}  // namespace deepinfer::server
