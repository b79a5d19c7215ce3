#include "engine/next_token_row.h"

namespace deepinfer::engine {

std::vector<int32_t> SuppressedIds(const Sequence& seq, int32_t eos_id) {
  std::vector<int32_t> ids;
  const SamplingParams& sp = seq.request.params;
  if (seq.n_output() < sp.min_tokens) {
    if (!sp.ignore_eos) ids.push_back(eos_id);
    ids.insert(ids.end(), sp.stop_token_ids.begin(), sp.stop_token_ids.end());
  }
  return ids;
}

SampleRow NextTokenRow(const Sequence& seq, const float* logits, const uint32_t* allowed,
                       std::span<const int32_t> suppressed) {
  SampleRow r;
  r.logits = logits;
  r.params = &seq.request.params;
  r.history = &seq.history;
  r.seed = seq.seed;
  r.sample_index = seq.request.sample_index;
  r.position = static_cast<int64_t>(seq.tokens.size());
  r.allowed_bits = allowed;
  r.suppressed = suppressed;
  return r;
}

}  // namespace deepinfer::engine
