// The pieces of speculative decoding: the target distribution equals what the sampler draws
// from, the accept/resample rule emits the target distribution exactly (integrated over a grid of
// both uniforms), and the length policies (fixed, threshold, the cost-model scheduler).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/sampling/sampler.h"
#include "engine/spec/length_policy.h"
#include "engine/spec/verify.h"

namespace deepinfer::engine::spec {
namespace {

TEST(SpecVerifyTest, TargetDistributionIsTheSamplersDistribution) {
  constexpr int64_t kV = 40;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<SamplingParams> sets(6);
  sets[0].temperature = 1.0f;
  sets[1].temperature = 0.7f;
  sets[1].top_k = 5;
  sets[2].temperature = 1.3f;
  sets[2].top_p = 0.6f;
  sets[3].temperature = 1.0f;
  sets[3].min_p = 0.1f;
  sets[3].repetition_penalty = 1.4f;
  sets[3].frequency_penalty = 0.3f;
  sets[4].temperature = 0.9f;
  sets[4].top_k = 12;
  sets[4].top_p = 0.9f;
  sets[4].logit_bias = {{3, 4.0f}, {9, -3.0f}};
  sets[5].temperature = 0.0f;  // greedy: a point mass
  TokenHistory history;
  history.AddPrompt(std::vector<int32_t>{1, 2, 3, 3});
  history.Append(5);
  history.Append(3);
  std::vector<uint32_t> mask(2, 0xFFFFFFFFu);
  mask[0] &= ~(1u << 7);  // token 7 masked
  const std::vector<int32_t> suppressed = {11};
  for (size_t k = 0; k < sets.size(); ++k) {
    std::vector<float> logits(kV);
    for (float& x : logits) x = normal(rng);
    std::vector<double> p;
    ASSERT_TRUE(
        TargetDistribution(logits.data(), kV, sets[k], history, mask.data(), suppressed, &p).ok());
    double sum = 0.0;
    for (double v : p) sum += v;
    EXPECT_NEAR(sum, 1.0, 1e-12);
    EXPECT_EQ(p[7], 0.0);
    EXPECT_EQ(p[11], 0.0);
    SamplingParams sp = sets[k];
    sp.logprobs = true;
    for (int64_t pos = 0; pos < 300; ++pos) {
      SampleResult r;
      ASSERT_TRUE(
          SampleOne(logits.data(), kV, sp, history, 77, 0, pos, mask.data(), suppressed, &r).ok());
      ASSERT_GT(p[r.token], 0.0) << "set " << k << " token " << r.token;
      if (!sp.greedy()) {
        // The sampler's logprob is of its kept, renormalized distribution (float exps).
        EXPECT_NEAR(std::log(p[r.token]), r.logprob, 2e-5) << "set " << k;
      } else {
        EXPECT_EQ(p[r.token], 1.0);
      }
    }
  }
}

TEST(SpecVerifyTest, AcceptOrResampleEmitsTheTarget) {
  const std::vector<double> p = {0.5, 0.05, 0.2, 0.0, 0.25};
  const std::vector<float> q = {0.1f, 0.4f, 0.2f, 0.2f, 0.1f};
  constexpr int kN = 400;  // midpoints of a kN x kN grid of (u_accept, u_resample)
  std::vector<double> emitted(p.size(), 0.0);
  double accepted = 0.0;
  for (size_t d = 0; d < q.size(); ++d) {  // the draft, drawn from q
    for (int i = 0; i < kN; ++i) {
      for (int j = 0; j < kN; ++j) {
        const DraftVerdict v =
            VerifyDraft(p, q, static_cast<int32_t>(d), (i + 0.5) / kN, (j + 0.5) / kN);
        const double w = q[d] / (static_cast<double>(kN) * kN);
        emitted[static_cast<size_t>(v.token)] += w;
        if (v.accepted) {
          EXPECT_EQ(v.token, static_cast<int32_t>(d));
          accepted += w;
        }
      }
    }
  }
  for (size_t t = 0; t < p.size(); ++t) EXPECT_NEAR(emitted[t], p[t], 3e-3) << "token " << t;
  // Acceptance probability = Σ min(p, q) = 1 - TV(p, q).
  double overlap = 0.0;
  for (size_t t = 0; t < p.size(); ++t) overlap += std::min(p[t], static_cast<double>(q[t]));
  EXPECT_NEAR(accepted, overlap, 3e-3);
}

TEST(SpecLengthPolicyTest, FixedAndThreshold) {
  StepCostModel cost(1.0, 0.0);
  LengthCandidate c;
  c.confidence = {3.0f, 1.0f, -1.0f, 2.0f};
  c.survival = {0.9, 0.7, 0.2, 0.18};
  c.max_len = 4;
  SpecOptions o;
  o.policy = SpecPolicy::kFixed;
  o.fixed_length = 2;
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 2);
  o.fixed_length = 0;
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 4);
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 3)[0], 2);  // the row budget
  c.max_len = 1;
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 1);
  c.max_len = 4;
  o.policy = SpecPolicy::kThreshold;
  o.threshold = 0.6f;  // sigmoid: 0.95, 0.73, 0.27 -> two drafts
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 2);
}

TEST(SpecLengthPolicyTest, CostModelStopsAtTheFirstNonImprovement) {
  SpecOptions o;
  o.policy = SpecPolicy::kCostModel;
  // One request, seconds(B) = 1 + 0.25 B: Θ(ℓ) = (1 + Σ a) / (1.25 + 0.25 ℓ).
  StepCostModel cost(1.0, 0.25);
  LengthCandidate c;
  c.confidence = {0, 0, 0, 0};
  c.survival = {0.9, 0.5, 0.45, 0.44};
  c.max_len = 4;
  // Θ(ℓ = 0..4): 0.8, 1.267, 1.371, 1.425, 1.462: every draft improves it.
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 4);
  // Θ: 0.8, 1.267, 1.371, then 1.225: the third draft does not pay for its row.
  c.survival = {0.9, 0.5, 0.05, 0.05};
  EXPECT_EQ(ChooseLengths(o, cost, std::span(&c, 1), 1, 1.0, 100)[0], 2);
  // Two requests: the higher a_j go first across requests.
  LengthCandidate d = c;
  d.survival = {0.3, 0.2, 0.1, 0.05};
  const std::vector<LengthCandidate> both = {c, d};
  const std::vector<int64_t> len = ChooseLengths(o, cost, both, 2, 2.0, 100);
  // B=2: Θ0 = 2/1.5 = 1.333; +0.9 -> 2.9/1.75 = 1.657; +0.5 -> 3.4/2.0 = 1.7;
  // +0.3 -> 3.7/2.25 = 1.644: stop.
  EXPECT_EQ(len[0], 2);
  EXPECT_EQ(len[1], 0);
}

TEST(SpecLengthPolicyTest, CalibrationFollowsObservedAcceptance) {
  AcceptanceCalibration cal;
  const std::vector<float> c = {4.0f, 4.0f};           // sigmoid 0.98: confident
  for (int i = 0; i < 200; ++i) cal.Observe(c, 2, 0);  // never accepted
  const std::vector<double> a = cal.Survival(c);
  EXPECT_LT(a[0], 0.02);
  AcceptanceCalibration good;
  for (int i = 0; i < 200; ++i) good.Observe(c, 2, 2);
  EXPECT_GT(good.Survival(c)[1], 0.9);
}

TEST(SpecStepCostTest, FitsALine) {
  StepCostModel m(0.0, 0.0);
  EXPECT_GT(m.Seconds(8), m.Seconds(1));  // the prior
  for (int i = 0; i < 50; ++i) {
    for (int rows : {1, 4, 9, 16}) m.Observe(rows, 0.01 + 0.002 * rows);
  }
  EXPECT_NEAR(m.Seconds(1), 0.012, 1e-6);
  EXPECT_NEAR(m.Seconds(30), 0.07, 1e-6);
  // Then one batch size for long enough that the spread decays away: the measured slope stays
  // (the prior's would price a row at 2% of the step), the level is the new observations'.
  for (int i = 0; i < 400; ++i) m.Observe(4, 0.01 + 0.002 * 4);
  EXPECT_NEAR(m.Seconds(8) - m.Seconds(4), 4 * 0.002, 1e-6);
  EXPECT_NEAR(m.Seconds(4), 0.018, 1e-6);
  StepCostModel fixed(0.5, 0.1);
  fixed.Observe(3, 100.0);  // ignored
  EXPECT_DOUBLE_EQ(fixed.Seconds(5), 1.0);
}

}  // namespace
}  // namespace deepinfer::engine::spec
