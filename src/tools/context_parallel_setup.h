// Context parallelism for the commands that run the engine (docs/scaleout.md, "Context
// parallelism"): under `mpirun` with more than one rank and `--context-parallel on|auto`, a
// prompt's prefill is split over every rank of the instance (engine/context_parallel_prefill.h)
// and lands in the engine of the rank that runs its request. Started alone, or with
// --context-parallel off, nothing changes.
//
// A CP group holds every expert (its ranks are at different layers, so the expert exchange's
// per-layer rounds would not line up): --context-parallel needs --expert-parallel off (and
// what engine::CheckContextParallel asks). The setup refuses other flags on every rank alike,
// before any collective call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/status.h"
#include "dist/context_exchange_mpi.h"
#include "engine/context_parallel_prefill.h"

namespace deepinfer::tools {

struct EngineFlags;
struct LoadedEngine;

struct ContextParallelSetup {
  std::unique_ptr<dist::MpiContextExchange> exchange;
  bool every_prompt = false;  // on; else auto: prompts of min_tokens or more
  int64_t min_tokens = 0;
  engine::ContextParallelOptions options;

  // Figures of this rank since the start.
  int64_t prompts = 0, decoded_here = 0, computed_tokens = 0, prefix_tokens = 0, bytes_sent = 0;
  double seconds = 0;

  // Whether a request with this prompt is prefilled over the ranks: long enough (auto) and a
  // prompt its request can hold (engine::CheckContextParallelPrompt).
  bool Splits(const LoadedEngine& e, std::span<const int32_t> prompt) const;
  // Every rank calls it for the same prompt in the same order; `decoder` runs the request.
  // A failure on this rank leaves the others waiting on it, so under MPI it ends the job
  // (stderr names the rank), as a dead rank does.
  // `prompt_logprobs`: the request's (they are scored where the positions are computed).
  void Prefill(LoadedEngine& e, std::span<const int32_t> prompt,
               std::optional<int32_t> prompt_logprobs, int decoder);
  // "context parallel: ..." figures for the per-rank report.
  std::string Report() const;
};

// The setup when this run splits prompts (null otherwise, or the flags' error).
StatusOr<std::unique_ptr<ContextParallelSetup>> AttachContextParallel(const LoadedEngine& e,
                                                                      const EngineFlags& flags);

}  // namespace deepinfer::tools
