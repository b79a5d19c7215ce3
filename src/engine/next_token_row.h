// The sampler's view of a sequence's next token, built one way for the engine's plain rows and
// for speculative verification (so a verified token is drawn exactly as a plain one would be):
//   * SuppressedIds: before min_tokens, EOS (unless ignore_eos) and the request's stop ids;
//   * NextTokenRow: the SampleRow of that token from a row of logits (params, penalty history,
//     seed, sample index, position = tokens so far, grammar mask, suppressed ids).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling/sampler.h"
#include "engine/sequence.h"

namespace deepinfer::engine {

std::vector<int32_t> SuppressedIds(const Sequence& seq, int32_t eos_id);

// `allowed`: the grammar mask (null: every token); `suppressed` must outlive the row.
SampleRow NextTokenRow(const Sequence& seq, const float* logits, const uint32_t* allowed,
                       std::span<const int32_t> suppressed);

}  // namespace deepinfer::engine
