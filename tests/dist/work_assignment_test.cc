#include "dist/work_assignment.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace deepinfer::dist {
namespace {

TEST(AssignByWork, OneRankTakesEverything) {
  const std::vector<int64_t> work = {5, 1, 9};
  EXPECT_EQ(AssignByWork(work, 1), (std::vector<int>{0, 0, 0}));
}

TEST(AssignByWork, LeastLoadedRankFirstLowestOnTies) {
  const std::vector<int64_t> work = {10, 3, 3, 3, 8};
  // 10 -> r0; the 3s -> r1 (3, 6, 9); 8 -> r1 as well, its 9 still below r0's 10.
  EXPECT_EQ(AssignByWork(work, 2), (std::vector<int>{0, 1, 1, 1, 1}));
  const std::vector<int64_t> equal = {4, 4, 4, 4};
  EXPECT_EQ(AssignByWork(equal, 4), (std::vector<int>{0, 1, 2, 3}));
}

TEST(AssignByWork, BalancesWithinTheLargestItem) {
  std::vector<int64_t> work(200);
  for (size_t i = 0; i < work.size(); ++i) work[i] = static_cast<int64_t>(1 + (i * 37) % 50);
  for (int ranks : {2, 3, 4}) {
    const std::vector<int> rank = AssignByWork(work, ranks);
    std::vector<int64_t> load(static_cast<size_t>(ranks), 0);
    for (size_t i = 0; i < work.size(); ++i) load[static_cast<size_t>(rank[i])] += work[i];
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, 50) << ranks << " ranks";  // greedy: within one item of each other
  }
}

TEST(AssignByWork, ZeroWorkStillSpreads) {
  const std::vector<int64_t> work = {0, 0, 0};
  EXPECT_EQ(AssignByWork(work, 3), (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace deepinfer::dist
