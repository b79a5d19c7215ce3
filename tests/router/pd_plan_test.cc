// The PD orchestration decisions: prefill then decode; one more prefill worker after a failure;
// the decode worker alone (a fallback) when prefill cannot be done; a rejected request is not a
// fallback.
#include "router/pd_plan.h"

#include <gtest/gtest.h>

namespace deepinfer::router {
namespace {

TEST(PdPlan, PrefillThenDecode) {
  PdPlan plan;
  EXPECT_EQ(plan.Start(true, 2), PdNext::kPrefill);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kOk, 1), PdNext::kDecode);
  EXPECT_FALSE(plan.fallback());
  EXPECT_EQ(plan.prefill_attempts(), 1);
}

TEST(PdPlan, OneRetryOnAnotherPrefillWorker) {
  PdPlan plan;
  plan.Start(true, 3);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kFailed, 2), PdNext::kPrefill);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kOk, 1), PdNext::kDecode);
  EXPECT_FALSE(plan.fallback());
  EXPECT_EQ(plan.prefill_attempts(), 2);
}

TEST(PdPlan, SecondFailureFallsBackToDecode) {
  PdPlan plan;
  plan.Start(true, 3);
  plan.AfterPrefill(PrefillOutcome::kFailed, 2);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kFailed, 1), PdNext::kDecodeDirect);
  EXPECT_TRUE(plan.fallback());
}

TEST(PdPlan, NoOtherPrefillWorkerFallsBackAtOnce) {
  PdPlan plan;
  plan.Start(true, 1);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kFailed, 0), PdNext::kDecodeDirect);
  EXPECT_TRUE(plan.fallback());
  EXPECT_EQ(plan.prefill_attempts(), 1);
}

TEST(PdPlan, NoHandOffPossible) {
  PdPlan no_address;
  EXPECT_EQ(no_address.Start(false, 2), PdNext::kDecodeDirect);
  EXPECT_TRUE(no_address.fallback());
  PdPlan no_prefill;
  EXPECT_EQ(no_prefill.Start(true, 0), PdNext::kDecodeDirect);
  EXPECT_TRUE(no_prefill.fallback());
}

TEST(PdPlan, RejectedRequestGoesToDecodeWithoutFallback) {
  PdPlan plan;
  plan.Start(true, 2);
  EXPECT_EQ(plan.AfterPrefill(PrefillOutcome::kRejected, 1), PdNext::kDecodeDirect);
  EXPECT_FALSE(plan.fallback());
}

}  // namespace
}  // namespace deepinfer::router
