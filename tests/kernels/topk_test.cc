// Deterministic top-k: ties to the lower index, -inf entries kept, against a sort reference.
#include "kernels/cpu/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace deepinfer::kernels {
namespace {

std::vector<int32_t> SortReference(const std::vector<float>& s, int64_t k) {
  std::vector<int32_t> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
  idx.resize(std::min<size_t>(k, s.size()));
  return idx;
}

TEST(TopKTest, TiesGoToLowerIndexInRankOrder) {
  const std::vector<float> s = {1, 3, 3, 0, 3, -0.0f, 0.0f, 2};
  std::vector<int32_t> out(5);
  std::vector<float> val(5);
  ASSERT_EQ(TopK(s.data(), s.size(), 5, out.data(), val.data()), 5);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2, 4, 7, 0}));
  EXPECT_EQ(val, (std::vector<float>{3, 3, 3, 2, 1}));
  // -0 and +0 tie: index 3 (0), then 5 (-0), then 6 (+0).
  std::vector<int32_t> all(8);
  TopK(s.data(), s.size(), 8, all.data(), nullptr);
  EXPECT_EQ(all, (std::vector<int32_t>{1, 2, 4, 7, 0, 3, 5, 6}));
}

TEST(TopKTest, MaskedEntriesAreLowestButStillReturned) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> s = {-inf, 0.5f, -inf, -inf, 0.25f};
  std::vector<int32_t> out(4);
  ASSERT_EQ(TopK(s.data(), s.size(), 4, out.data(), nullptr), 4);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 4, 0, 2}));
  std::vector<int32_t> big(10);
  EXPECT_EQ(TopK(s.data(), s.size(), 10, big.data(), nullptr), 5);  // k > n
  EXPECT_EQ(TopK(s.data(), s.size(), 0, big.data(), nullptr), 0);
}

TEST(TopKTest, MatchesStableSortOnTieHeavyData) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coarse(-20, 20);  // few distinct values: many ties
  for (int n : {1, 10, 513, 4096, 40000}) {
    std::vector<float> s(n);
    for (auto& v : s)
      v = coarse(rng) <= -15 ? -std::numeric_limits<float>::infinity() : coarse(rng) * 0.125f;
    for (int64_t k : {1, 6, 512, 2048}) {
      std::vector<int32_t> out(std::min<int64_t>(k, n));
      TopK(s.data(), n, k, out.data(), nullptr);
      EXPECT_EQ(out, SortReference(s, k)) << "n " << n << " k " << k;
    }
  }
}

TEST(TopKTest, SortIndicesAscending) {
  std::vector<int32_t> v = {5, 1, 9, 3};
  SortIndicesAscending(v.data(), v.size());
  EXPECT_EQ(v, (std::vector<int32_t>{1, 3, 5, 9}));
}

}  // namespace
}  // namespace deepinfer::kernels
