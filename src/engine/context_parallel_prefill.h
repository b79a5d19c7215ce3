// A prompt's prefill over the ranks of a context-parallel group, landing in the engine of the
// rank that decodes it (docs/scaleout.md, "Context parallelism").
//
// Contract. Every rank of the group calls ContextParallelPrefill with the same prompt, the same
// decoding rank and the same options, prompts in the same order. The group computes the prompt's
// first len - 1 positions as rows of the whole prompt (as a prefill leg does: page_handoff.h)
// with model::PrefillContextParallel, the decoding rank's chunk last. On the decoding rank the
// complete pages then enter its engine's prefix cache under their block keys and the sequence's
// state becomes a held SequenceTail (Engine::ImportPages), so that the request with this prompt,
// added next on that rank, computes only its last position and samples its first token itself:
// its outputs are a one-process run's by the hand-off's contract. On the other ranks nothing
// changes in the engine.
//
// Prompt logprobs (`prompt_logprobs`: the request's top-k): every rank scores the rows of its own
// chunks (engine::ComputePromptLogprobs over their logits, as the engine scores a prompt) and
// sends them to the decoding rank, whose tail then carries all len - 1 entries; only a request
// asking for exactly that k continues it (Engine::TakeTail). Such a prefill adopts no cached
// prefix (its positions must be scored).
//
// A cached prefix. The decoding rank first looks the prompt up in its own prefix cache; the
// complete pages it holds travel to every other rank (one message each), which adopt them
// (Model::AdoptPrefix), and the chunks cover the rest. When the cache holds all len - 1
// positions' complete pages and nothing is left but the partial page, no rank computes anything.
//
// DSpark (the runner's drafts on): every rank extends the stage rings of its own chunks from their
// taps (per row: a chunk needs nothing of the others) and sends its chunks' stage page tails to
// the decoding rank, which writes them into its pages and rebuilds the rings of the window
// positions before its last chunk from them, so the tail carries rings over every position.
//
// Preconditions (CheckContextParallel, the same verdict on every rank): the prefix cache on and
// decoder-side replay off (its page tails are incomplete).
//
// Threads: the engine's owner thread, between steps (ImportPages). An error on one rank leaves
// the others waiting on it: under MPI the caller ends the job.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/status.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "model/deepseek_v41/context_parallel.h"

namespace deepinfer::engine {

struct ContextParallelOptions {
  int chunks_per_rank = 4;  // dealt round-robin (model::PlanContextChunks)
};

struct ContextParallelReport {
  int64_t prefix_tokens = 0;                 // adopted from the decoding rank's prefix cache
  int64_t computed_tokens = 0;               // positions the group computed
  int64_t bytes_sent = 0;                    // by this rank, prefix pages included
  double seconds = 0;                        // wall time on this rank
  ImportResult import;                       // the decoding rank's
  std::shared_ptr<const SequenceTail> tail;  // the decoding rank's, as imported
};

// Whether `runner` and `engine` can take part (see the contract).
Status CheckContextParallel(const DeepSeekRunner& runner, const Engine& engine);
// Whether `prompt` can be prefilled over the ranks: at least 2 tokens, and Engine::Add's checks
// of a prompt (its tokens: Engine::CheckPromptTokens; shorter than the context). A prompt that
// fails them is left to its request, which Add refuses.
Status CheckContextParallelPrompt(const Engine& engine, std::span<const int32_t> prompt);

// `ex` names ranks as the group sees them; `decoder` is the one that decodes.
StatusOr<ContextParallelReport> ContextParallelPrefill(const DeepSeekRunner& runner, Engine& engine,
                                                       std::span<const int32_t> prompt,
                                                       std::optional<int32_t> prompt_logprobs,
                                                       int decoder, model::ContextExchange& ex,
                                                       const ContextParallelOptions& options);

}  // namespace deepinfer::engine
