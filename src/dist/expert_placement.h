// ExpertPlacement: which ranks hold each routed expert of each MoE layer (expert parallelism,
// docs/scaleout.md). A logical expert has one or more holders (EPLB replicas); every rank holds
// the same number of experts per layer (its slots), and never two copies of one expert.
//
// Contract: a pure value. Every rank builds the same placement from the same inputs (Blocked, or
// an EPLB plan computed from the same all-reduced loads), so ranks never send it to each other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer::dist {

class ExpertPlacement {
 public:
  ExpertPlacement() = default;
  // Expert e of every layer on rank e * n_ranks / n_experts (contiguous blocks, one holder).
  static ExpertPlacement Blocked(std::span<const int64_t> experts_per_layer, int n_ranks);

  int n_ranks() const { return n_ranks_; }
  int n_layers() const { return static_cast<int>(holders_.size()); }
  int64_t n_experts(int layer) const {
    return static_cast<int64_t>(holders_[static_cast<size_t>(layer)].size());
  }
  // The ranks holding expert `expert` of `layer`, ascending.
  const std::vector<int>& holders(int layer, int64_t expert) const {
    return holders_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  }
  bool holds(int layer, int64_t expert, int rank) const;
  // 1 for each expert of `layer` that `rank` holds.
  std::vector<uint8_t> HeldBy(int layer, int rank) const;
  // Replaces a layer's holders (one list per expert, each non-empty).
  void SetLayer(int layer, std::vector<std::vector<int>> holders);

  // The rank that runs `expert` for a row of `home`: home itself when it holds a copy, else one
  // of the holders spread by `row`.
  int Target(int layer, int64_t expert, int home, int64_t row) const;

 private:
  int n_ranks_ = 1;
  std::vector<std::vector<std::vector<int>>> holders_;  // [layer][expert] -> ranks
};

}  // namespace deepinfer::dist
