#include "dist/work_assignment.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer::dist {

std::vector<int> AssignByWork(std::span<const int64_t> work, int n_ranks) {
  CHECK_GE(n_ranks, 1);
  std::vector<int64_t> load(static_cast<size_t>(n_ranks), 0);
  std::vector<int> rank(work.size());
  for (size_t i = 0; i < work.size(); ++i) {
    const auto least = std::min_element(load.begin(), load.end());  // first minimum: lowest rank
    rank[i] = static_cast<int>(least - load.begin());
    *least += std::max<int64_t>(work[i], 1);
  }
  return rank;
}

}  // namespace deepinfer::dist
