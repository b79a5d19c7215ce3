// What the ranks of a context-parallel prefill send the decoding rank besides the pages'
// layers (engine/context_parallel_prefill.h): the prompt logprobs each rank scored over its
// chunks' rows, and the DSpark stage page tails of its chunks. `group` names the ranks with the
// decoding rank last; every rank calls each function once per prompt, after the prefill.
// Wire forms (little-endian, both ends this code): scored rows as u64 run count, then per run
// i64 first entry, u64 count and per entry i32 token, f32 logprob and the top list (core/
// byte_io.h array); DSpark tails as the stage tail bytes of each page of the sender's chunks, in
// chunk, page and stage order.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/sampling/sampler.h"
#include "model/deepseek_v41/context_parallel.h"
#include "model/deepseek_v41/sequence_state.h"

namespace deepinfer::engine {

// Prompt logprobs of runs of rows: [first entry, its results].
using ScoredRows = std::vector<std::pair<int64_t, std::vector<SampleResult>>>;

// The decoding rank gets all `n` entries in order (DataLoss when a rank's bytes are malformed or
// some entry is missing); the others send theirs and get none.
StatusOr<std::vector<SampleResult>> GatherScored(model::ContextExchange& group, int tag,
                                                 const ScoredRows& mine, int64_t n);

// The decoding rank writes every other rank's chunks' DSpark stage tails into its pages and
// rebuilds the stage rings of the window before its last chunk from them (its own chunks'
// rows it extended itself); the others send theirs.
Status GatherDSparkTails(model::ContextExchange& group, int tag,
                         std::span<const model::ContextChunk> chunks, model::SequenceState* s);

}  // namespace deepinfer::engine
