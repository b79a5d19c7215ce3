#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sampling/sampler.h"

namespace deepinfer::engine {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// ---- Scalar references (double precision, sort-based), written from the order in sampler.h ----

std::vector<double> RefProcess(const std::vector<float>& logits, const SamplingParams& p,
                               const TokenHistory& h) {
  std::vector<double> x(logits.begin(), logits.end());
  for (auto [id, bias] : p.logit_bias) x[id] += bias;
  for (size_t id = 0; id < x.size(); ++id) {
    const auto t = static_cast<int32_t>(id);
    if (h.Seen(t)) x[id] = x[id] > 0 ? x[id] / p.repetition_penalty : x[id] * p.repetition_penalty;
    const int c = h.GeneratedCount(t);
    x[id] -= p.frequency_penalty * c;
    if (c > 0) x[id] -= p.presence_penalty;
  }
  return x;
}

std::vector<double> RefLogSoftmax(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double z = 0;
  for (double v : x) z += std::exp(v - m);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - m - std::log(z);
  return out;
}

// The kept distribution of step 5 (probabilities, 0 for dropped tokens).
std::vector<double> RefKept(const std::vector<double>& x, const SamplingParams& p) {
  const size_t n = x.size();
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> e(n);
  for (size_t i = 0; i < n; ++i) e[i] = std::exp((x[i] - m) / p.temperature);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return e[a] > e[b]; });
  double keep = 0;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) keep = e[order[p.top_k - 1]];
  if (p.top_p < 1) {
    double total = 0;
    for (double v : e) total += v >= keep ? v : 0;
    double cum = 0;
    for (size_t i : order) {
      cum += e[i];
      if (cum >= p.top_p * total) {
        keep = std::max(keep, e[i]);
        break;
      }
    }
  }
  keep = std::max(keep, static_cast<double>(p.min_p));
  double z = 0;
  for (double v : e) z += v >= keep ? v : 0;
  std::vector<double> prob(n);
  for (size_t i = 0; i < n; ++i) prob[i] = e[i] >= keep ? e[i] / z : 0;
  return prob;
}

SampleResult Sample(const std::vector<float>& logits, const SamplingParams& p,
                    const TokenHistory& h = {}, int64_t position = 0, uint64_t seed = 1,
                    const uint32_t* bits = nullptr, std::span<const int32_t> suppressed = {}) {
  SampleResult r;
  const Status st = SampleOne(logits.data(), static_cast<int64_t>(logits.size()), p, h, seed, 0,
                              position, bits, suppressed, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return r;
}

SamplingParams Greedy(int top_logprobs = 0) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = top_logprobs > 0;
  p.top_logprobs = top_logprobs;
  return p;
}

const std::vector<float> kSmall = {1.0f, 2.5f,  -0.5f, 2.5f, 0.0f,  1.7f, -3.0f, 0.3f,
                                   2.2f, -1.0f, 0.9f,  1.9f, -2.0f, 0.1f, 2.4f,  -0.7f};

TEST(SamplingSampler, GreedyTiesGoToTheLowerId) {
  EXPECT_EQ(Sample(kSmall, Greedy()).token, 1);
  std::vector<float> flat(40000, 0.25f);
  EXPECT_EQ(Sample(flat, Greedy()).token, 0);
  flat[39999] = 0.5f;
  flat[20001] = 0.5f;
  EXPECT_EQ(Sample(flat, Greedy()).token, 20001);
}

// Greedy logprobs are log_softmax of the processed logits; top lists every token here.
void ExpectGreedyLogprobs(const std::vector<float>& logits, const SamplingParams& p,
                          const TokenHistory& h) {
  const std::vector<double> ref = RefLogSoftmax(RefProcess(logits, p, h));
  const SampleResult r = Sample(logits, p, h);
  const auto best = std::max_element(ref.begin(), ref.end()) - ref.begin();
  EXPECT_EQ(r.token, best);
  EXPECT_NEAR(r.logprob, ref[best], 1e-5);
  ASSERT_EQ(r.top.size(), logits.size());
  for (size_t i = 0; i < r.top.size(); ++i) {
    EXPECT_NEAR(r.top[i].logprob, ref[r.top[i].token], 2e-5) << r.top[i].token;
    if (i > 0) {
      EXPECT_GE(r.top[i - 1].logprob, r.top[i].logprob);
    }
  }
}

TEST(SamplingSampler, GreedyLogprobsAreLogSoftmax) { ExpectGreedyLogprobs(kSmall, Greedy(16), {}); }

TEST(SamplingSampler, LogitBiasMatchesReference) {
  SamplingParams p = Greedy(16);
  p.logit_bias = {{2, 5.0f}, {6, 3.5f}, {14, -1.0f}};
  ExpectGreedyLogprobs(kSmall, p, {});
  EXPECT_EQ(Sample(kSmall, p).token, 2);
}

TokenHistory History() {
  TokenHistory h;
  const int32_t prompt[] = {0, 6, 6, 9};
  h.AddPrompt(prompt);
  for (int32_t t : {1, 1, 1, 11, 2, 6}) h.Append(t);
  return h;
}

TEST(SamplingSampler, RepetitionPenaltyMatchesReference) {
  SamplingParams p = Greedy(16);
  p.repetition_penalty = 1.7f;
  ExpectGreedyLogprobs(kSmall, p, History());
}

TEST(SamplingSampler, PresencePenaltyMatchesReference) {
  SamplingParams p = Greedy(16);
  p.presence_penalty = 1.5f;
  ExpectGreedyLogprobs(kSmall, p, History());
  p.presence_penalty = -2.0f;
  ExpectGreedyLogprobs(kSmall, p, History());
}

TEST(SamplingSampler, FrequencyPenaltyMatchesReference) {
  SamplingParams p = Greedy(16);
  p.frequency_penalty = 0.4f;
  ExpectGreedyLogprobs(kSmall, p, History());
  EXPECT_EQ(Sample(kSmall, p, History()).token, 3);  // token 1 was generated 3 times
}

TEST(SamplingSampler, AllPenaltiesTogetherMatchReference) {
  SamplingParams p = Greedy(16);
  p.repetition_penalty = 0.8f;
  p.presence_penalty = 0.3f;
  p.frequency_penalty = 0.2f;
  p.logit_bias = {{6, 4.0f}};
  ExpectGreedyLogprobs(kSmall, p, History());
}

TEST(SamplingSampler, TokenHistoryRollback) {
  TokenHistory h = History();
  EXPECT_EQ(h.GeneratedCount(1), 3);
  EXPECT_EQ(h.GeneratedCount(6), 1);
  const int32_t last_two[] = {2, 6};
  h.Rollback(last_two);  // 6 stays seen through the prompt
  EXPECT_EQ(h.n_generated(), 4);
  EXPECT_EQ(h.GeneratedCount(6), 0);
  EXPECT_TRUE(h.Seen(6));
  EXPECT_FALSE(h.Seen(2));
  const int32_t first_four[] = {1, 1, 1, 11};
  h.Rollback(first_four);
  EXPECT_EQ(h.n_generated(), 0);
  EXPECT_FALSE(h.Seen(1));
  EXPECT_TRUE(h.Seen(0));
  EXPECT_TRUE(h.generated_counts().empty());
}

TEST(SamplingSampler, MaskAndSuppressionExcludeTokens) {
  uint32_t bits = 0xFFFF & ~(1u << 1) & ~(1u << 3);  // tokens 1 and 3 (the maxima) disallowed
  EXPECT_EQ(Sample(kSmall, Greedy(), {}, 0, 1, &bits).token, 14);
  const int32_t suppressed[] = {14};
  EXPECT_EQ(Sample(kSmall, Greedy(), {}, 0, 1, &bits, suppressed).token, 8);
  // Sampling never picks a disallowed token, and the top list leaves them out.
  SamplingParams p;
  p.logprobs = true;
  p.top_logprobs = 20;
  for (int pos = 0; pos < 300; ++pos) {
    const SampleResult r = Sample(kSmall, p, {}, pos, 5, &bits, suppressed);
    ASSERT_NE(r.token, 1);
    ASSERT_NE(r.token, 3);
    ASSERT_NE(r.token, 14);
    ASSERT_EQ(r.top.size(), 13u);
  }
}

TEST(SamplingSampler, ErrorsAreStatuses) {
  SampleResult r;
  const uint32_t none = 0;
  std::vector<float> x(16, 0.0f);
  Status st = SampleOne(x.data(), 16, SamplingParams(), {}, 1, 0, 0, &none, {}, &r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  st = SampleOne(x.data(), 16, SamplingParams(), {}, 1, 0, 0, nullptr, {}, &r);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  x[3] = 0;
  SamplingParams p;
  p.logit_bias = {{16, 1.0f}};
  EXPECT_FALSE(SampleOne(x.data(), 16, p, {}, 1, 0, 0, nullptr, {}, &r).ok());
  EXPECT_FALSE(
      SampleOne(x.data(), 16, SamplingParams(), {}, 1, int64_t{1} << 32, 0, nullptr, {}, &r).ok());
  EXPECT_FALSE(SampleOne(x.data(), 16, SamplingParams(), {}, 1, 0, -1, nullptr, {}, &r).ok());
  SamplingParams invalid;
  invalid.top_p = 0.0f;
  EXPECT_EQ(SampleOne(x.data(), 16, invalid, {}, 1, 0, 0, nullptr, {}, &r).code(),
            StatusCode::kInvalidArgument);
  const int32_t bad[] = {-1};
  EXPECT_FALSE(SampleOne(x.data(), 16, SamplingParams(), {}, 1, 0, 0, nullptr, bad, &r).ok());
}

// Chi-square goodness of fit of 40,000 seeded draws against the reference kept distribution,
// and no draw outside it. Critical values at p = 0.001.
void ExpectDistribution(const std::vector<float>& logits, const SamplingParams& p) {
  const std::vector<double> prob = RefKept(RefProcess(logits, p, {}), p);
  constexpr int kDraws = 40000;
  std::vector<int> counts(logits.size());
  for (int i = 0; i < kDraws; ++i) ++counts[Sample(logits, p, {}, i, 77).token];
  double chi2 = 0;
  int df = -1;
  for (size_t t = 0; t < prob.size(); ++t) {
    if (prob[t] == 0) {
      EXPECT_EQ(counts[t], 0) << "token " << t << " is outside the kept set";
      continue;
    }
    const double expected = prob[t] * kDraws;
    chi2 += (counts[t] - expected) * (counts[t] - expected) / expected;
    ++df;
  }
  // chi-square 0.999 quantiles for df = 0..15.
  const double critical[] = {0,     10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32,
                             26.12, 27.88, 29.59, 31.26, 32.91, 34.53, 36.12, 37.70};
  ASSERT_LT(df, 16);
  if (df > 0) {
    EXPECT_LT(chi2, critical[df]) << "df " << df;
  }
}

TEST(SamplingSampler, DistributionMatchesSoftmaxAfterTruncation) {
  SamplingParams p;
  ExpectDistribution(kSmall, p);  // plain softmax
  p.temperature = 0.6f;
  ExpectDistribution(kSmall, p);
  p.temperature = 1.4f;
  p.top_k = 6;
  ExpectDistribution(kSmall, p);  // 1 and 3 tie; 6 keeps ids 1,3,14,8,11,5
  p.top_k = 0;
  p.top_p = 0.8f;
  ExpectDistribution(kSmall, p);
  p.top_k = 9;
  p.top_p = 0.7f;
  ExpectDistribution(kSmall, p);
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.2f;
  ExpectDistribution(kSmall, p);
  p.top_k = 10;
  p.top_p = 0.95f;
  p.min_p = 0.1f;
  p.temperature = 0.8f;
  ExpectDistribution(kSmall, p);
}

// Logprobs: the top list holds exactly the kept set, its probabilities sum to 1 and equal the
// reference's.
TEST(SamplingSampler, LogprobsAreOfTheSampledDistribution) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 12;
  p.top_p = 0.9f;
  p.logprobs = true;
  p.top_logprobs = 20;
  const std::vector<double> prob = RefKept(RefProcess(kSmall, p, {}), p);
  const size_t n_kept = std::count_if(prob.begin(), prob.end(), [](double v) { return v > 0; });
  for (int pos = 0; pos < 50; ++pos) {
    const SampleResult r = Sample(kSmall, p, {}, pos, 3);
    ASSERT_EQ(r.top.size(), n_kept);
    double sum = 0;
    for (const TokenLogprob& t : r.top) {
      sum += std::exp(static_cast<double>(t.logprob));
      EXPECT_NEAR(t.logprob, std::log(prob[t.token]), 1e-5);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_NEAR(r.logprob, std::log(prob[r.token]), 1e-5);
  }
}

std::vector<float> LargeLogits(int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(vocab);
  for (auto& v : x) v = normal(rng);
  for (int i = 0; i < 30; ++i) x[rng() % vocab] += 9.0f;  // a few likely tokens
  return x;
}

// At the real vocabulary size the candidate pruning must not change the result: the 20 best
// kept tokens and their logprobs equal the reference (so the kept mass does too).
TEST(SamplingSampler, LargeVocabularyMatchesReference) {
  constexpr int64_t kVocab = 129280;
  const std::vector<float> logits = LargeLogits(kVocab, 11);
  struct Case {
    float temperature;
    int top_k;
    float top_p;
    float min_p;
  };
  for (const Case& c :
       {Case{1.0f, 0, 0.9f, 0.0f}, Case{1.0f, 0, 1.0f, 0.0f}, Case{0.7f, 50, 1.0f, 0.0f},
        Case{1.3f, 0, 1.0f, 0.001f}, Case{1.0f, 2000, 0.95f, 0.0f}, Case{2.0f, 0, 0.5f, 0.0f}}) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.logprobs = true;
    p.top_logprobs = 20;
    const std::vector<double> prob = RefKept(RefProcess(logits, p, {}), p);
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 20, order.end(),
                      [&](int32_t a, int32_t b) { return prob[a] > prob[b]; });
    for (int pos = 0; pos < 3; ++pos) {
      const SampleResult r = Sample(logits, p, {}, pos, 99);
      ASSERT_GT(prob[r.token], 0.0) << "sampled outside the kept set";
      ASSERT_EQ(r.top.size(), 20u);
      for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(r.top[i].token, order[i]);
        EXPECT_NEAR(r.top[i].logprob, std::log(prob[order[i]]), 2e-4) << c.temperature;
      }
    }
  }
}

// Same (seed, sample_index, position) -> same token, whatever the batch around it and however
// many threads run it.
TEST(SamplingSampler, DeterministicAcrossBatchesAndThreads) {
  constexpr int64_t kVocab = 129280;
  constexpr int kRows = 12;
  std::vector<std::vector<float>> logits;
  for (int r = 0; r < kRows; ++r) logits.push_back(LargeLogits(kVocab, 100 + r));
  SamplingParams p;
  p.top_p = 0.95f;
  p.temperature = 1.1f;
  auto run = [&](const std::vector<int>& rows, ThreadPool* pool) {
    std::vector<SampleRow> batch;
    for (int r : rows) {
      SampleRow row;
      row.logits = logits[r].data();
      row.params = &p;
      row.seed = 1000 + r;
      row.sample_index = r % 3;
      row.position = 17 * r;
      batch.push_back(row);
    }
    std::vector<SampleResult> out(batch.size());
    for (const Status& s : SampleBatch(batch, kVocab, out, pool))
      EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<int32_t> tokens(kRows, -1);
    for (size_t i = 0; i < rows.size(); ++i) tokens[rows[i]] = out[i].token;
    return tokens;
  };
  ThreadPool one(1), two(2), three(3);
  std::vector<int> all(kRows);
  std::iota(all.begin(), all.end(), 0);
  const std::vector<int32_t> expected = run(all, &one);
  std::vector<int> reversed(all.rbegin(), all.rend());
  EXPECT_EQ(run(reversed, &two), expected);
  EXPECT_EQ(run(all, &three), expected);
  for (int r = 0; r < kRows; ++r) {
    const std::vector<int32_t> alone = run({r}, &two);
    EXPECT_EQ(alone[r], expected[r]) << r;
  }
  // A different seed changes some tokens (the draw really depends on it).
  SamplingParams q = p;
  int differ = 0;
  for (int pos = 0; pos < 20; ++pos) {
    differ += Sample(logits[0], q, {}, pos, 1).token != Sample(logits[0], q, {}, pos, 2).token;
  }
  EXPECT_GT(differ, 0);
}

TEST(SamplingSampler, OneBadRowFailsOnlyItself) {
  // A row whose mask allows nothing and a row with a NaN logit fail; their neighbours get what
  // SampleOne gives them alone.
  constexpr int64_t kVocab = 4096;
  std::vector<std::vector<float>> logits;
  for (int r = 0; r < 5; ++r) logits.push_back(LargeLogits(kVocab, 200 + r));
  logits[3][17] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<uint32_t> none((kVocab + 31) / 32, 0);
  SamplingParams p;
  p.temperature = 0.8f;
  std::vector<SampleRow> batch(5);
  for (int r = 0; r < 5; ++r) {
    batch[r].logits = logits[r].data();
    batch[r].params = &p;
    batch[r].seed = 7 + r;
    batch[r].position = r;
  }
  batch[1].allowed_bits = none.data();
  std::vector<SampleResult> out(batch.size());
  ThreadPool pool(2);
  const std::vector<Status> status = SampleBatch(batch, kVocab, out, &pool);
  ASSERT_EQ(status.size(), batch.size());
  EXPECT_FALSE(status[1].ok());
  EXPECT_FALSE(status[3].ok());
  const TokenHistory empty;
  for (int r : {0, 2, 4}) {
    ASSERT_TRUE(status[r].ok()) << status[r].ToString();
    SampleResult alone;
    ASSERT_TRUE(
        SampleOne(logits[r].data(), kVocab, p, empty, batch[r].seed, 0, r, nullptr, {}, &alone)
            .ok());
    EXPECT_EQ(out[r].token, alone.token) << r;
  }
}

TEST(SamplingSampler, PromptLogprobsAreLogSoftmaxOfRawLogits) {
  constexpr int64_t kVocab = 300;
  constexpr int64_t kRows = 4;
  std::vector<float> logits(kRows * (kVocab + 5));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (auto& v : logits) v = normal(rng);
  const int32_t next[kRows] = {0, 17, 299, 150};
  std::vector<SampleResult> out(kRows);
  ASSERT_TRUE(ComputePromptLogprobs(logits.data(), kRows, kVocab + 5, kVocab, next, 5, out).ok());
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<float> row(logits.begin() + r * (kVocab + 5),
                                 logits.begin() + r * (kVocab + 5) + kVocab);
    const std::vector<double> ref = RefLogSoftmax(std::vector<double>(row.begin(), row.end()));
    EXPECT_EQ(out[r].token, next[r]);
    EXPECT_NEAR(out[r].logprob, ref[next[r]], 1e-5);
    ASSERT_EQ(out[r].top.size(), 5u);
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int32_t a, int32_t b) { return ref[a] > ref[b]; });
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(out[r].top[i].token, order[i]);
      EXPECT_NEAR(out[r].top[i].logprob, ref[order[i]], 1e-5);
    }
  }
  const int32_t bad[kRows] = {0, 0, 300, 0};
  EXPECT_FALSE(ComputePromptLogprobs(logits.data(), kRows, kVocab + 5, kVocab, bad, 5, out).ok());
}

}  // namespace
}  // namespace deepinfer::engine
