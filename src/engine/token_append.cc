#include "engine/token_append.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer::engine {

bool StopsOutput(const SamplingParams& params, int32_t token, int64_t n_out, int32_t eos_id) {
  if (n_out < params.min_tokens) return false;
  if (!params.ignore_eos && token == eos_id) return true;
  return std::find(params.stop_token_ids.begin(), params.stop_token_ids.end(), token) !=
         params.stop_token_ids.end();
}

std::optional<FinishReason> AppendToken(Sequence* seq, int32_t token, int32_t eos_id,
                                        int64_t max_positions) {
  seq->tokens.push_back(token);
  seq->history.Append(token);
  if (seq->matcher) {
    CHECK(seq->matcher->AcceptToken(token)) << "sampled token " << token << " outside the grammar";
    if (seq->matcher->IsTerminated()) return FinishReason::kStop;
  } else if (seq->request.grammar && token == *seq->request.grammar_start_token) {
    seq->matcher = std::make_unique<structured::GrammarMatcher>(seq->request.grammar);
  }
  const SamplingParams& sp = seq->request.params;
  const int64_t n_out = seq->n_output();
  if (StopsOutput(sp, token, n_out, eos_id)) return FinishReason::kStop;
  if (sp.max_tokens && n_out >= *sp.max_tokens) return FinishReason::kLength;
  if (static_cast<int64_t>(seq->tokens.size()) >= max_positions) return FinishReason::kLength;
  return std::nullopt;
}

}  // namespace deepinfer::engine
