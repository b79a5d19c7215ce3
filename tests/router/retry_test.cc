// Backoff: at most max_retries retries, delays 50 ms x 1.5^k within the jitter.
#include "router/retry.h"

#include <gtest/gtest.h>

#include <cmath>

namespace deepinfer::router {
namespace {

TEST(Backoff, DelaysGrowWithinTheJitter) {
  Backoff b(RetryOptions{}, 1);
  for (int k = 0; k < 4; ++k) {
    const double base = 0.050 * std::pow(1.5, k);
    for (int i = 0; i < 50; ++i) {
      const double d = b.Delay(k).count();
      EXPECT_GE(d, base * 0.8 - 1e-12);
      EXPECT_LE(d, base * 1.2 + 1e-12);
    }
  }
}

TEST(Backoff, AtMostMaxRetries) {
  Backoff b(RetryOptions{}, 1);
  EXPECT_TRUE(b.MayRetry(1));
  EXPECT_TRUE(b.MayRetry(2));
  EXPECT_FALSE(b.MayRetry(3));
  Backoff none(RetryOptions{.max_retries = 0}, 1);
  EXPECT_FALSE(none.MayRetry(1));
}

TEST(Backoff, RetryableStatuses) {
  EXPECT_TRUE(RetryableStatus(502));
  EXPECT_TRUE(RetryableStatus(503));
  for (int s : {200, 400, 401, 404, 429, 500}) EXPECT_FALSE(RetryableStatus(s)) << s;
}

}  // namespace
}  // namespace deepinfer::router
