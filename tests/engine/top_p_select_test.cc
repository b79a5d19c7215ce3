// TopPThreshold (engine/sampling/top_p_select.h) against sort-and-scan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "engine/sampling/top_p_select.h"

namespace deepinfer::engine {
namespace {

// TopPThreshold against sort-and-scan, on sets small and large, with ties.
TEST(TopPSelect, ThresholdMatchesSortedScan) {
  std::mt19937 rng(3);
  for (int64_t n : {1, 5, 31, 33, 200, 5000, 100000}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<float> v(n);
      std::exponential_distribution<float> expo(1.0f);
      for (auto& x : v) x = trial == 3 ? std::round(expo(rng) * 4) / 4 : expo(rng);  // ties
      v[0] = 1.0f;
      double total = 0;
      for (float x : v) total += x;
      const double target = (0.1 + 0.3 * trial) * total;
      std::vector<float> sorted = v;
      std::sort(sorted.begin(), sorted.end(), std::greater<float>());
      float expected = sorted.back();
      double cum = 0;
      for (float x : sorted) {
        cum += x;
        if (cum >= target) {
          expected = x;
          break;
        }
      }
      std::vector<float> work = v, spare(n);
      const float got = TopPThreshold(work.data(), n, target, spare.data());
      // Mass above the threshold: at least the target, and without the threshold's own value
      // below it (minimality), up to double rounding of different summation orders.
      double above = 0, strictly_above = 0;
      for (float x : v) {
        if (x >= got) above += x;
        if (x > got) strictly_above += x;
      }
      EXPECT_GE(above, target * (1 - 1e-12)) << n << " " << trial;
      EXPECT_LT(strictly_above, target * (1 + 1e-12)) << n << " " << trial;
      EXPECT_EQ(got, expected) << n << " " << trial;
    }
  }
}

}  // namespace
}  // namespace deepinfer::engine
