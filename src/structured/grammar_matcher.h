// GrammarMatcher: the per-request state of constrained decoding over a CompiledGrammar.
//
//   GrammarMatcher m(compiled);                 // cheap: empty state space, no vocabulary work
//   m.FillNextTokenBitmask(bits);               // bits[t / 32] bit (t % 32): token t allowed
//   m.AcceptToken(sampled);                     // false (state unchanged) for a disallowed token
//   m.Rollback(n_rejected_drafts);              // speculative decoding
//
// Matching is on bytes, so a UTF-8 character may be split across tokens. A mask never allows a
// token after which the grammar cannot be completed; it allows the stop tokens (EOS) exactly when
// the grammar can end here; special and added tokens are never allowed. After an accepted stop
// token the matcher is terminated and allows nothing. The whole history is kept, so Rollback may
// undo any number of accepted tokens (including the stop token).
//
// Not thread-safe; one matcher per request. Matchers of one CompiledGrammar may run on different
// threads (the shared mask cache locks).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/state_space.h"

namespace deepinfer::structured {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled);

  // Advances over one token; false (and no change) when the token is not allowed.
  bool AcceptToken(int32_t token);
  // Advances over raw bytes (tests, forced text); false and no change when they do not match.
  // Counts as one history entry for Rollback.
  bool AcceptBytes(std::string_view bytes);
  // Writes vocabulary().n_words() words.
  void FillNextTokenBitmask(uint32_t* bits);
  // Undoes the last n accepted tokens (n <= n_accepted()).
  void Rollback(int n);
  void Reset();

  bool IsTerminated() const { return terminated_; }
  // The grammar can end here (a stop token would be accepted).
  bool CanEnd() const { return !terminated_ && space_.can_end(history_.back()); }
  int n_accepted() const { return static_cast<int>(history_.size()) - 1 + (terminated_ ? 1 : 0); }
  // Fewest bytes that complete the grammar from here (0 when it can end now).
  int64_t MinCompletionBytes() { return space_.MinCompletionBytes(history_.back()); }
  const CompiledGrammar& compiled() const { return *compiled_; }
  int32_t n_words() const { return compiled_->vocabulary().n_words(); }

 private:
  void AddTopMask(int32_t top, uint32_t* bits);

  std::shared_ptr<const CompiledGrammar> compiled_;
  StateSpace space_;
  std::vector<int32_t> history_;  // state after each accepted token; [0] = initial
  bool terminated_ = false;
  std::vector<int32_t> key_, walk_states_;
  std::vector<uint8_t> walk_context_;
};

}  // namespace deepinfer::structured
