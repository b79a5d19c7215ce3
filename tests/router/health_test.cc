// HealthTracker: the first probe decides; then 3 failures take a worker down, 2 passes bring it
// back, and a single result against the run resets it.
#include "router/health.h"

#include <gtest/gtest.h>

namespace deepinfer::router {
namespace {

using Change = HealthTracker::Change;

TEST(HealthTracker, FirstProbeDecides) {
  HealthTracker up, down;
  EXPECT_FALSE(up.known());
  EXPECT_EQ(up.Record(true), Change::kUp);
  EXPECT_TRUE(up.up());
  EXPECT_EQ(down.Record(false), Change::kDown);
  EXPECT_FALSE(down.up());
  EXPECT_TRUE(down.known());
}

TEST(HealthTracker, ThreeFailuresDownTwoPassesUp) {
  HealthTracker h;
  h.Record(true);
  EXPECT_EQ(h.Record(false), Change::kNone);
  EXPECT_EQ(h.Record(false), Change::kNone);
  EXPECT_TRUE(h.up());
  EXPECT_EQ(h.Record(false), Change::kDown);
  EXPECT_FALSE(h.up());
  EXPECT_EQ(h.Record(true), Change::kNone);
  EXPECT_FALSE(h.up());
  EXPECT_EQ(h.Record(true), Change::kUp);
  EXPECT_TRUE(h.up());
}

TEST(HealthTracker, RunsMustBeConsecutive) {
  HealthTracker h;
  h.Record(true);
  h.Record(false);
  h.Record(false);
  h.Record(true);  // resets the failures
  h.Record(false);
  h.Record(false);
  EXPECT_TRUE(h.up());
  EXPECT_EQ(h.Record(false), Change::kDown);
  h.Record(true);
  h.Record(false);  // resets the passes
  EXPECT_EQ(h.Record(true), Change::kNone);
  EXPECT_EQ(h.Record(true), Change::kUp);
}

TEST(HealthTracker, OtherThresholds) {
  HealthTracker h(HealthThresholds{.fails_to_down = 1, .passes_to_up = 3});
  h.Record(true);
  EXPECT_EQ(h.Record(false), Change::kDown);
  EXPECT_EQ(h.Record(true), Change::kNone);
  EXPECT_EQ(h.Record(true), Change::kNone);
  EXPECT_EQ(h.Record(true), Change::kUp);
}

}  // namespace
}  // namespace deepinfer::router
