#include "structured/state_space.h"

#include <algorithm>

namespace deepinfer::structured {

using Kind = Grammar::ElementKind;

StateSpace::StateSpace(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {}

int32_t StateSpace::InternNode(int32_t elem, int32_t sub, int32_t parent) {
  const uint64_t h =
      MixIds(MixIds(MixIds(0, static_cast<uint32_t>(elem)), static_cast<uint32_t>(sub)),
             static_cast<uint32_t>(parent));
  const int32_t found = node_index_.Find(h, [&](int32_t id) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    return n.elem == elem && n.sub == sub && n.parent == parent;
  });
  if (found >= 0) return found;
  const auto id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({elem, sub, parent});
  parent_cost_.push_back(-1);
  node_index_.Insert(h, id);
  return id;
}

void StateSpace::Settle(int32_t elem0, int32_t parent0) {
  const auto& elements = grammar_->elements();
  work_.clear();
  work_.emplace_back(elem0, parent0);
  while (!work_.empty()) {
    auto [elem, parent] = work_.back();
    work_.pop_back();
    if (std::find(visited_.begin(), visited_.end(), std::make_pair(elem, parent)) !=
        visited_.end()) {
      continue;
    }
    visited_.emplace_back(elem, parent);
    const Grammar::Element& el = elements[elem];
    switch (el.kind) {
      case Kind::kEnd:
        if (parent == kRootParent) {
          scratch_end_ = true;
        } else if (parent == kContextParent) {
          scratch_context_ = true;
        } else {
          const Node& p = nodes_[parent];
          work_.emplace_back(p.elem + 1, p.parent);
        }
        break;
      case Kind::kLiteral:
      case Kind::kClass:
        scratch_tops_.push_back(InternNode(elem, 0, parent));
        break;
      case Kind::kRule: {
        // Tail call: nothing follows the reference, so its alternatives return to our parent.
        const int32_t child_parent =
            elements[elem + 1].kind == Kind::kEnd ? parent : InternNode(elem, 0, parent);
        for (int32_t alt : grammar_->rules()[el.index].alternatives) {
          work_.emplace_back(alt, child_parent);
        }
        break;
      }
    }
  }
}

int32_t StateSpace::InternState() {
  std::sort(scratch_tops_.begin(), scratch_tops_.end());
  scratch_tops_.erase(std::unique(scratch_tops_.begin(), scratch_tops_.end()), scratch_tops_.end());
  uint64_t h = MixIds(0, (scratch_end_ ? 1u : 0u) | (scratch_context_ ? 2u : 0u));
  for (int32_t t : scratch_tops_) h = MixIds(h, static_cast<uint32_t>(t));
  const int32_t found = state_index_.Find(h, [&](int32_t id) {
    const StateInfo& s = states_[static_cast<size_t>(id)];
    return s.can_end == scratch_end_ && s.reached_context == scratch_context_ &&
           std::equal(top_pool_.begin() + s.begin, top_pool_.begin() + s.end, scratch_tops_.begin(),
                      scratch_tops_.end());
  });
  if (found >= 0) return found;
  const auto id = static_cast<int32_t>(states_.size());
  state_index_.Insert(h, id);
  states_.push_back({static_cast<int32_t>(top_pool_.size()),
                     static_cast<int32_t>(top_pool_.size() + scratch_tops_.size()), scratch_end_,
                     scratch_context_});
  top_pool_.insert(top_pool_.end(), scratch_tops_.begin(), scratch_tops_.end());
  transitions_.resize(transitions_.size() + 256, -1);
  return id;
}

int32_t StateSpace::InitialState() {
  if (initial_ >= 0) return initial_;
  scratch_tops_.clear();
  visited_.clear();
  scratch_end_ = scratch_context_ = false;
  for (int32_t alt : grammar_->rules()[grammar_->root()].alternatives) Settle(alt, kRootParent);
  initial_ = InternState();
  return initial_;
}

int32_t StateSpace::SingleTopState(int32_t top) {
  scratch_tops_.assign(1, top);
  scratch_end_ = scratch_context_ = false;
  return InternState();
}

int32_t StateSpace::ComputeStep(int32_t state, uint8_t byte) {
  const auto& elements = grammar_->elements();
  // Copy the tops: InternState (at the end) grows top_pool_.
  step_from_.assign(tops(state).begin(), tops(state).end());
  scratch_tops_.clear();
  visited_.clear();
  scratch_end_ = scratch_context_ = false;
  for (int32_t t : step_from_) {
    const Node n = nodes_[t];
    const Grammar::Element& el = elements[n.elem];
    if (el.kind == Kind::kLiteral) {
      const std::string& lit = grammar_->literals()[el.index];
      if (static_cast<uint8_t>(lit[n.sub]) != byte) continue;
      if (static_cast<size_t>(n.sub) + 1 < lit.size()) {
        scratch_tops_.push_back(InternNode(n.elem, n.sub + 1, n.parent));
      } else {
        Settle(n.elem + 1, n.parent);
      }
    } else {
      const int32_t next = grammar_->classes()[el.index].Step(n.sub, byte);
      if (next > 0) {
        scratch_tops_.push_back(InternNode(n.elem, next, n.parent));
      } else if (next == 0) {
        Settle(n.elem + 1, n.parent);
      }
    }
  }
  return InternState();
}

int64_t StateSpace::ParentCost(int32_t node) {
  if (node < 0) return 0;
  if (parent_cost_[node] >= 0) return parent_cost_[node];
  // Iterative over the chain (stacks can be deep).
  std::vector<int32_t> chain;
  for (int32_t p = node; p >= 0 && parent_cost_[p] < 0; p = nodes_[p].parent) chain.push_back(p);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Node& n = nodes_[*it];
    const int64_t above = n.parent >= 0 ? parent_cost_[n.parent] : 0;
    parent_cost_[*it] = std::min(Grammar::kInfinite, grammar_->SuffixMinBytes(n.elem + 1) + above);
  }
  return parent_cost_[node];
}

int64_t StateSpace::MinCompletionBytes(int32_t state) {
  if (can_end(state)) return 0;
  int64_t best = Grammar::kInfinite;
  for (int32_t t : tops(state)) {
    const Node& n = nodes_[t];
    const Grammar::Element& el = grammar_->elements()[n.elem];
    int64_t here;
    if (el.kind == Kind::kLiteral) {
      here = grammar_->SuffixMinBytes(n.elem) - n.sub;
    } else if (n.sub == 0) {
      here = grammar_->SuffixMinBytes(n.elem);
    } else {
      here = CharClass::PendingBytes(n.sub) + grammar_->SuffixMinBytes(n.elem + 1);
    }
    best = std::min(best, here + ParentCost(n.parent));
  }
  return best;
}

}  // namespace deepinfer::structured
