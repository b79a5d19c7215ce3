#include "structured/grammar_matcher.h"

#include <cstring>

namespace deepinfer::structured {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled)
    : compiled_(std::move(compiled)), space_(compiled_->grammar()) {
  history_.push_back(space_.InitialState());
}

void GrammarMatcher::Reset() {
  history_.resize(1);
  terminated_ = false;
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (terminated_) return false;
  int32_t s = history_.back();
  for (size_t i = 0; i < bytes.size(); ++i) {
    s = space_.Step(s, static_cast<uint8_t>(bytes[i]));
    if (space_.dead(s) && !(i + 1 == bytes.size() && space_.can_end(s))) return false;
  }
  history_.push_back(s);
  return true;
}

bool GrammarMatcher::AcceptToken(int32_t token) {
  const Vocabulary& v = compiled_->vocabulary();
  if (terminated_ || token < 0 || token >= v.size()) return false;
  if (v.IsStop(token)) {
    if (!space_.can_end(history_.back())) return false;
    terminated_ = true;
    return true;
  }
  if (!v.usable(token)) return false;
  return AcceptBytes(v.bytes(token));
}

void GrammarMatcher::Rollback(int n) {
  CHECK(n >= 0 && n <= n_accepted())
      << "rollback of " << n << " with " << n_accepted() << " accepted tokens";
  if (n > 0 && terminated_) terminated_ = false, --n;
  history_.resize(history_.size() - n);
}

void GrammarMatcher::AddTopMask(int32_t top, uint32_t* bits) {
  // Key: the top frame and its parents, one more frame each time the entry asks to refine.
  const CompiledGrammar::MaskEntry* entry = nullptr;
  for (int depth = 1;; ++depth) {
    key_.clear();
    const StateSpace::Node& t = space_.node(top);
    key_.push_back(compiled_->CanonicalElement(t.elem));
    key_.push_back(t.sub);
    int32_t p = t.parent;
    for (int d = 1; d < depth && p >= 0; ++d) {
      key_.push_back(compiled_->CanonicalElement(space_.node(p).elem));
      p = space_.node(p).parent;
    }
    key_.push_back(p == StateSpace::kRootParent ? -1 : -2);
    entry = &compiled_->Lookup(key_);
    if (!entry->refine || p == StateSpace::kRootParent) break;
  }
  const int32_t n_words = compiled_->vocabulary().n_words();
  if (!entry->accepted_bits.empty()) {
    const uint32_t* src = entry->accepted_bits.data();
    for (int32_t w = 0; w < n_words; ++w) bits[w] |= src[w];
  } else {
    for (int32_t id : entry->accepted_ids) bits[id >> 5] |= 1u << (id & 31);
  }
  if (entry->uncertain_ranks.empty()) return;
  const Vocabulary& v = compiled_->vocabulary();
  WalkTokens(space_, space_.SingleTopState(top), entry->uncertain_ranks, entry->uncertain_lcp, v,
             walk_states_, walk_context_, [&](int32_t rank, TokenVerdict verdict) {
               if (verdict != TokenVerdict::kAccepted) return;
               const int32_t id = v.sorted_ids()[static_cast<size_t>(rank)];
               bits[id >> 5] |= 1u << (id & 31);
             });
}

void GrammarMatcher::FillNextTokenBitmask(uint32_t* bits) {
  std::memset(bits, 0, sizeof(uint32_t) * n_words());
  if (terminated_) return;
  const int32_t state = history_.back();
  // Copy: AddTopMask grows the state space (and may move the top pool).
  const std::vector<int32_t> tops(space_.tops(state).begin(), space_.tops(state).end());
  for (int32_t top : tops) AddTopMask(top, bits);
  if (space_.can_end(state)) {
    for (int32_t id : compiled_->vocabulary().stop_ids()) bits[id >> 5] |= 1u << (id & 31);
  }
}

}  // namespace deepinfer::structured
