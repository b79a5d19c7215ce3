// Which rows of a forward call's logits the engine reads for a sequence, and the prompt
// logprobs it reads from them (used by the prepare and commit stages of Engine::Step).
//
// A call that reaches the end of a sequence's tokens returns its last row (the next token is
// sampled from it). With params.prompt_logprobs, every row from the first prompt position not
// yet scored to the end of the call comes back too: row r scores the prompt token after it.
// A recompute after a preemption does not score a position twice (prompt_logprobs_done).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "engine/sequence.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::engine {

// Rows of logits the forward call returns for `seq` consuming n_tokens more positions.
int64_t LogitRows(const Sequence& seq, int64_t n_tokens);

// After the call that advanced `seq` to seq->computed: fills seq->prompt_logprobs from its last
// n_rows rows (`logits`: [n_rows][vocab]).
Status GatherPromptLogprobs(Sequence* seq, const float* logits, int64_t n_rows, int64_t vocab,
                            ThreadPool* pool);

}  // namespace deepinfer::engine
