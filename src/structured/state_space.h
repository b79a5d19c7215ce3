// The pushdown automaton the matcher runs, with its states interned and its byte transitions
// memoized (a lazily built DFA over the reachable part of the PDA).
//
// A frame (Node) is a position in the flat grammar: element index + sub-position (byte offset in
// a literal, partial UTF-8 state in a class) + the parent frame to resume when the alternative
// ends. Nodes are hash-consed, so a stack is a node id. A rule reference in tail position pushes
// its alternatives with the caller's parent (tail call), so right recursion (x*, strings) keeps
// the stack flat. A State is the set of top frames after some bytes (each waiting on a literal or
// class element) plus two flags: the root rule can end here (can_end) and, for stacks cut off at
// a context sentinel (compile-time mask walks), some path popped into the unknown context.
//
// Not thread-safe: each matcher owns one; the compiled grammar guards its own with a mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"
#include "structured/id_table.h"
#include "structured/vocabulary.h"

namespace deepinfer::structured {

class StateSpace {
 public:
  static constexpr int32_t kRootParent = -1;     // the bottom of a real stack
  static constexpr int32_t kContextParent = -2;  // the cut-off bottom of a mask-cache stack

  struct Node {
    int32_t elem, sub, parent;
  };

  explicit StateSpace(std::shared_ptr<const Grammar> grammar);

  const Grammar& grammar() const { return *grammar_; }
  int32_t InternNode(int32_t elem, int32_t sub, int32_t parent);
  const Node& node(int32_t id) const { return nodes_[id]; }

  // The state before any byte: the root rule's alternatives.
  int32_t InitialState();
  // The state whose only top is `top` (a node at a literal or class element).
  int32_t SingleTopState(int32_t top);
  // The state after `byte` (memoized).
  int32_t Step(int32_t state, uint8_t byte) {
    const size_t slot = static_cast<size_t>(state) * 256 + byte;
    if (transitions_[slot] < 0) {
      const int32_t next = ComputeStep(state, byte);  // may grow transitions_
      transitions_[slot] = next;
    }
    return transitions_[slot];
  }

  std::span<const int32_t> tops(int32_t state) const {
    const StateInfo& s = states_[state];
    return {top_pool_.data() + s.begin, static_cast<size_t>(s.end - s.begin)};
  }
  bool dead(int32_t state) const { return states_[state].begin == states_[state].end; }
  bool can_end(int32_t state) const { return states_[state].can_end; }
  bool reached_context(int32_t state) const { return states_[state].reached_context; }

  // Fewest bytes that complete the root from this state (0 when it can end here).
  int64_t MinCompletionBytes(int32_t state);
  size_t n_states() const { return states_.size(); }
  size_t n_nodes() const { return nodes_.size(); }
  // Bytes held (an estimate: the vectors' capacities and the index tables).
  size_t memory_bytes() const {
    return sizeof(Node) * nodes_.capacity() + sizeof(StateInfo) * states_.capacity() +
           4 * (top_pool_.capacity() + transitions_.capacity()) + 8 * parent_cost_.capacity() +
           node_index_.memory_bytes() + state_index_.memory_bytes();
  }

 private:
  struct StateInfo {
    int32_t begin, end;
    bool can_end, reached_context;
  };
  int32_t ComputeStep(int32_t state, uint8_t byte);
  // Closure: make position (elem, sub 0) under `parent` current, pushing rule references and
  // popping finished alternatives, collecting top frames in scratch_tops_.
  void Settle(int32_t elem, int32_t parent);
  int32_t InternState();
  int64_t ParentCost(int32_t node);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  IdTable node_index_;  // (elem, sub, parent) -> node id
  std::vector<StateInfo> states_;
  std::vector<int32_t> top_pool_;
  IdTable state_index_;               // (tops, flags) -> state id
  std::vector<int32_t> transitions_;  // [state * 256 + byte], -1 unknown
  std::vector<int64_t> parent_cost_;  // per node, -1 unknown
  int32_t initial_ = -1;

  // Scratch for ComputeStep / Settle.
  std::vector<int32_t> scratch_tops_, step_from_;
  std::vector<std::pair<int32_t, int32_t>> visited_, work_;
  bool scratch_end_ = false, scratch_context_ = false;
};

}  // namespace deepinfer::structured

namespace deepinfer::structured {

enum class TokenVerdict : uint8_t { kAccepted, kRejected, kUncertain };

// Walks tokens given by their ranks in vocab's byte order (ascending; lcp[i] = common prefix
// with token i-1 of this list) from `start`, sharing the steps of common prefixes and skipping
// every token under a dead prefix. A token is kAccepted when all its bytes are consumed with some
// frame still alive (or the root ended exactly at its last byte), kUncertain when it was not
// accepted but some path popped into the cut-off context on the way, kRejected otherwise.
// visit(rank, verdict) is called for every token (its id: vocab.sorted_ids()[rank]).
// `depth_states`/`depth_context` are scratch (reused between calls).
template <typename Visit>
void WalkTokens(StateSpace& space, int32_t start, std::span<const int32_t> ranks,
                std::span<const uint16_t> lcp, const Vocabulary& vocab,
                std::vector<int32_t>& depth_states, std::vector<uint8_t>& depth_context,
                Visit&& visit) {
  constexpr size_t kAlive = static_cast<size_t>(-1);
  const size_t max_len = vocab.max_token_bytes();  // every usable token's length bound
  depth_states.resize(max_len + 1);
  depth_context.resize(max_len + 1);
  depth_states[0] = start;
  depth_context[0] = 0;
  size_t dead = kAlive;  // depth at which the last walked prefix died
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string_view b = vocab.sorted_view(ranks[i]);
    const size_t l = i == 0 ? 0 : lcp[i];
    if (dead != kAlive && dead <= l) {
      visit(ranks[i], depth_context[dead] ? TokenVerdict::kUncertain : TokenVerdict::kRejected);
      continue;
    }
    dead = kAlive;
    for (size_t d = l; d < b.size(); ++d) {
      const int32_t s = space.Step(depth_states[d], static_cast<uint8_t>(b[d]));
      depth_states[d + 1] = s;
      depth_context[d + 1] = depth_context[d] | (space.reached_context(s) ? 1 : 0);
      if (space.dead(s)) {
        dead = d + 1;
        break;
      }
    }
    if (dead == kAlive || (dead == b.size() && space.can_end(depth_states[dead]))) {
      visit(ranks[i], TokenVerdict::kAccepted);
    } else {
      visit(ranks[i], depth_context[dead] ? TokenVerdict::kUncertain : TokenVerdict::kRejected);
    }
  }
}

}  // namespace deepinfer::structured
