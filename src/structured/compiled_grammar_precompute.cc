// CompiledGrammar::Precompute: the mask entries a matcher can ask for, built ahead of its first
// request (compiled_grammar.h, "Precomputed entries").
#include <chrono>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include "structured/compiled_grammar.h"

namespace deepinfer::structured {

namespace {

using Kind = Grammar::ElementKind;

// Who can be the parent frame of a frame in each rule: the non-tail references to a rule that
// reaches it through tail references (a tail reference passes its own parent on), and whether
// the root reaches it that way (the frame then sits on the bottom of the stack).
class ParentSites {
 public:
  explicit ParentSites(const Grammar& g) : g_(g) {
    const auto& el = g.elements();
    rule_of_.assign(el.size(), -1);
    tail_callers_.resize(g.rules().size());
    non_tail_sites_.resize(g.rules().size());
    for (size_t r = 0; r < g.rules().size(); ++r) {
      const Grammar::Rule& rule = g.rules()[r];
      if (rule.alternatives.empty()) continue;
      int32_t end = rule.alternatives.back();
      while (el[static_cast<size_t>(end)].kind != Kind::kEnd) ++end;
      for (int32_t e = rule.alternatives.front(); e <= end; ++e) {
        rule_of_[static_cast<size_t>(e)] = static_cast<int32_t>(r);
        if (el[static_cast<size_t>(e)].kind != Kind::kRule) continue;
        const auto callee = static_cast<size_t>(el[static_cast<size_t>(e)].index);
        if (el[static_cast<size_t>(e) + 1].kind == Kind::kEnd) {
          tail_callers_[callee].push_back(static_cast<int32_t>(r));
        } else {
          non_tail_sites_[callee].push_back(e);
        }
      }
    }
    sites_.resize(g.rules().size());
    root_reaches_.assign(g.rules().size(), -1);
  }

  int32_t rule_of(int32_t elem) const { return rule_of_[static_cast<size_t>(elem)]; }

  // Non-tail reference elements whose frame can be the parent of a frame in rule r.
  const std::vector<int32_t>& Sites(int32_t r) {
    Resolve(r);
    return sites_[static_cast<size_t>(r)];
  }
  // Whether a frame in rule r can have the root below it.
  bool AtRoot(int32_t r) {
    Resolve(r);
    return root_reaches_[static_cast<size_t>(r)] == 1;
  }

 private:
  // The rules that reach r through tail references (r included), walked backwards.
  void Resolve(int32_t r) {
    const auto ri = static_cast<size_t>(r);
    if (root_reaches_[ri] >= 0) return;
    std::vector<int32_t> stack{r};
    std::unordered_set<int32_t> seen{r};
    bool root = false;
    std::vector<int32_t>& sites = sites_[ri];
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      if (s == g_.root()) root = true;
      const auto si = static_cast<size_t>(s);
      sites.insert(sites.end(), non_tail_sites_[si].begin(), non_tail_sites_[si].end());
      for (int32_t caller : tail_callers_[si]) {
        if (seen.insert(caller).second) stack.push_back(caller);
      }
    }
    root_reaches_[ri] = root ? 1 : 0;
  }

  const Grammar& g_;
  std::vector<int32_t> rule_of_;
  std::vector<std::vector<int32_t>> tail_callers_, non_tail_sites_, sites_;
  std::vector<int8_t> root_reaches_;  // -1 not resolved yet
};

}  // namespace

CompiledGrammar::PrecomputeStats CompiledGrammar::Precompute(double budget_seconds) const {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  PrecomputeStats stats;
  const Grammar& g = *grammar_;
  ParentSites parents(g);
  // A key still to build, with the raw element whose parents extend it when it refines (its
  // last parent frame, or the top itself at depth 1).
  struct Pending {
    std::vector<int32_t> key;  // without the terminator
    int32_t innermost;
  };
  std::deque<Pending> queue;
  std::unordered_set<std::string> queued;
  auto enqueue_with_parents = [&](const std::vector<int32_t>& base, int32_t innermost) {
    const int32_t rule = parents.rule_of(innermost);
    if (rule < 0) return;
    // The key cut here: at the root (exact) and/or above some parent (cut off).
    for (int32_t terminator : {-1, -2}) {
      if (terminator == -1 && !parents.AtRoot(rule)) continue;
      if (terminator == -2 && parents.Sites(rule).empty()) continue;
      std::vector<int32_t> key = base;
      key.push_back(terminator);
      // Keyed with the innermost frame's rule too: canonical keys of different rules (a bounded
      // repetition's twins) may have different parents to extend them with.
      std::string k(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int32_t));
      k.append(reinterpret_cast<const char*>(&rule), sizeof(rule));
      if (queued.insert(std::move(k)).second) queue.push_back({std::move(key), innermost});
    }
  };
  // Depth 1: every top position.
  const auto& el = g.elements();
  for (size_t e = 0; e < el.size(); ++e) {
    const auto elem = static_cast<int32_t>(e);
    int32_t subs = 0;
    if (el[e].kind == Kind::kLiteral) {
      subs = static_cast<int32_t>(g.literals()[static_cast<size_t>(el[e].index)].size());
    } else if (el[e].kind == Kind::kClass) {
      subs = 1;  // at a character boundary (partial UTF-8 states stay lazy: too many)
    }
    for (int32_t sub = 0; sub < subs; ++sub) {
      enqueue_with_parents({CanonicalElement(elem), sub}, elem);
    }
  }
  while (!queue.empty()) {
    Pending p = std::move(queue.front());
    queue.pop_front();
    bool refine = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string k(reinterpret_cast<const char*>(p.key.data()),
                          p.key.size() * sizeof(int32_t));
      if (!cache_.contains(k) && elapsed() > budget_seconds) {
        stats.seconds = elapsed();
        return stats;
      }
      const size_t before = cache_.size();
      refine = LookupLocked(p.key).refine;
      stats.entries += cache_.size() - before;
    }
    if (!refine) continue;  // (exact keys and keys kMaxKeyDepth deep never refine)
    // One parent deeper: each frame that can sit below the innermost one.
    std::vector<int32_t> base(p.key.begin(), p.key.end() - 1);
    for (int32_t site : parents.Sites(parents.rule_of(p.innermost))) {
      std::vector<int32_t> deeper = base;
      deeper.push_back(CanonicalElement(site));
      enqueue_with_parents(deeper, site);
    }
  }
  stats.complete = true;
  stats.seconds = elapsed();
  return stats;
}

}  // namespace deepinfer::structured
