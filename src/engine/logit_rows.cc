#include "engine/logit_rows.h"

#include <algorithm>
#include <span>

#include "engine/sampling/sampler.h"

namespace deepinfer::engine {

int64_t LogitRows(const Sequence& seq, int64_t n_tokens) {
  const int64_t end = seq.computed + n_tokens;
  const int64_t first = std::max(seq.computed, seq.prompt_logprobs_done);
  if (seq.request.params.prompt_logprobs && first < std::min(end, seq.prompt_len - 1)) {
    return end - first;
  }
  return end == static_cast<int64_t>(seq.tokens.size()) ? 1 : 0;
}

Status GatherPromptLogprobs(Sequence* seq, const float* logits, int64_t n_rows, int64_t vocab,
                            ThreadPool* pool) {
  // Row r of `logits` is position first_pos + r; it scores the token after it, the prompt token
  // it stands for being entry (position) of prompt_logprobs.
  const int64_t first_pos = seq->computed - n_rows;
  const int64_t begin = std::max(first_pos, seq->prompt_logprobs_done);
  const int64_t end = std::min(seq->computed, seq->prompt_len - 1);
  if (end > begin) {
    seq->prompt_logprobs.resize(static_cast<size_t>(seq->prompt_len - 1));
    const size_t n = static_cast<size_t>(end - begin);
    DI_RETURN_IF_ERROR(ComputePromptLogprobs(
        logits + (begin - first_pos) * vocab, end - begin, vocab, vocab,
        std::span<const int32_t>(seq->tokens).subspan(static_cast<size_t>(begin + 1), n),
        *seq->request.params.prompt_logprobs,
        std::span<SampleResult>(seq->prompt_logprobs).subspan(static_cast<size_t>(begin), n),
        pool));
  }
  seq->prompt_logprobs_done = std::max(seq->prompt_logprobs_done, end);
  return Status::Ok();
}

}  // namespace deepinfer::engine
