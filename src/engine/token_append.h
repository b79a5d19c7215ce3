// The commit of one sampled token (Engine::Step's sample and speculation stages): the token
// joins the sequence (tokens, penalty history, grammar matcher) and the end-of-output rules
// decide whether the output ends at it:
//   * a grammar that reached its end (its stop token accepted) ends it, even with ignore_eos;
//   * from min_tokens on, EOS (unless ignore_eos) and the request's stop ids end it;
//   * max_tokens, or the model's context being full, ends it with kLength.
// A token outside the grammar mask is a bug (CHECK): the sampler only draws allowed ids.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/request.h"
#include "engine/sequence.h"

namespace deepinfer::engine {

// Whether `token`, as the request's output token number `n_out` (1-based), ends the output by
// EOS or a stop id (the second rule above; the grammar and length rules are AppendToken's).
bool StopsOutput(const SamplingParams& params, int32_t token, int64_t n_out, int32_t eos_id);

std::optional<FinishReason> AppendToken(Sequence* seq, int32_t token, int32_t eos_id,
                                        int64_t max_positions);

}  // namespace deepinfer::engine
