// TokenHistory: the per-sequence token statistics the sampler's penalties read.
//
// repetition_penalty applies to every id seen in the prompt or the output; presence and frequency
// penalties to the output only, weighted by count. Updates are incremental (one Append per
// accepted token) and the last output tokens can be rolled back (rejected speculative drafts).
// The tokens themselves are not kept here: the sequence's token list is the one copy (Rollback
// takes the dropped tokens from it). Cost: O(1) expected per token; memory O(distinct ids).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

namespace deepinfer::engine {

class TokenHistory {
 public:
  // Records prompt tokens (call before any Append; may be called in pieces, e.g. per chunk).
  void AddPrompt(std::span<const int32_t> tokens);
  // Records one generated token.
  void Append(int32_t token);
  // Forgets the last generated tokens, `dropped` (in generation order; CHECK: each was counted).
  void Rollback(std::span<const int32_t> dropped);

  int64_t n_generated() const { return n_generated_; }
  // Times `token` was generated (0 if never).
  int32_t GeneratedCount(int32_t token) const;
  // Whether `token` occurs in the prompt or the output.
  bool Seen(int32_t token) const;

  // Distinct generated ids with their counts (presence / frequency penalties) and distinct ids of
  // prompt + output with their occurrence counts (repetition penalty; the count only serves
  // Rollback). Iteration order is unspecified: every penalty acts on one id alone.
  const std::unordered_map<int32_t, int32_t>& generated_counts() const { return generated_counts_; }
  const std::unordered_map<int32_t, int32_t>& seen_counts() const { return seen_counts_; }

 private:
  int64_t n_generated_ = 0;
  std::unordered_map<int32_t, int32_t> generated_counts_;
  std::unordered_map<int32_t, int32_t> seen_counts_;
};

}  // namespace deepinfer::engine
