#include "dist/expert_placement.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace deepinfer::dist {

ExpertPlacement ExpertPlacement::Blocked(std::span<const int64_t> experts_per_layer, int n_ranks) {
  CHECK_GE(n_ranks, 1);
  ExpertPlacement p;
  p.n_ranks_ = n_ranks;
  for (const int64_t n : experts_per_layer) {
    std::vector<std::vector<int>> layer(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e)
      layer[static_cast<size_t>(e)] = {static_cast<int>(e * n_ranks / n)};
    p.holders_.push_back(std::move(layer));
  }
  return p;
}

bool ExpertPlacement::holds(int layer, int64_t expert, int rank) const {
  const std::vector<int>& h = holders(layer, expert);
  return std::binary_search(h.begin(), h.end(), rank);
}

std::vector<uint8_t> ExpertPlacement::HeldBy(int layer, int rank) const {
  std::vector<uint8_t> held(static_cast<size_t>(n_experts(layer)), 0);
  for (int64_t e = 0; e < n_experts(layer); ++e)
    held[static_cast<size_t>(e)] = holds(layer, e, rank);
  return held;
}

void ExpertPlacement::SetLayer(int layer, std::vector<std::vector<int>> holders) {
  CHECK_EQ(holders.size(), holders_[static_cast<size_t>(layer)].size());
  for (std::vector<int>& h : holders) {
    CHECK(!h.empty()) << "an expert without a holder";
    std::sort(h.begin(), h.end());
  }
  holders_[static_cast<size_t>(layer)] = std::move(holders);
}

int ExpertPlacement::Target(int layer, int64_t expert, int home, int64_t row) const {
  const std::vector<int>& h = holders(layer, expert);
  if (h.size() == 1) return h[0];
  if (std::binary_search(h.begin(), h.end(), home)) return home;
  return h[static_cast<size_t>((row + expert) % static_cast<int64_t>(h.size()))];
}

}  // namespace deepinfer::dist
