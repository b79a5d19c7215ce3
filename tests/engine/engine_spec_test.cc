// Speculative decoding in the engine with a toy drafter (spec_fake_runner.h):
//   * with point-mass drafts the output equals plain decoding token for token and logprob for
//     logprob, greedy and seeded sampling alike (verify.h), under every length policy, mixed
//     batches with opted-out requests, preemption, prefix hits, async on/off, stop conditions
//     and penalties;
//   * with drafts sampled from a distribution q unlike the target p, the spec-sampled tokens
//     follow p (chi-square on 8 tokens, fixed seeds).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "spec_fake_runner.h"

namespace deepinfer::engine {
namespace {

using testing::SpecFakeRunner;

struct RunOut {
  std::vector<int32_t> ids;
  std::vector<uint32_t> logprob_bits;
  FinishReason finish = FinishReason::kError;
};

struct Case {
  std::vector<int32_t> prompt;
  SamplingParams params;
  bool speculative = true;
  int stop_on_token = -1;  // stop_check: output ends after this token
};

struct RunConfig {
  spec::SpecOptions spec;
  int64_t budget_pages = 4096;
  int64_t max_running = 8;
  int64_t chunk = 16;
  int64_t batch_tokens = 64;
  bool prefix_cache = true;
  bool async = true;
};

std::vector<RunOut> RunEngine(SpecFakeRunner* runner, const std::vector<Case>& cases,
                              const RunConfig& rc, EngineStats* stats = nullptr,
                              std::vector<int> submit_step = {}) {
  EngineOptions eo;
  eo.kv_budget_bytes =
      rc.budget_pages * runner->page_bytes() + rc.max_running * runner->sequence_bytes();
  eo.scheduler.max_running = rc.max_running;
  eo.scheduler.prefill_chunk = rc.chunk;
  eo.scheduler.max_batch_tokens = rc.batch_tokens;
  eo.prefix_cache = rc.prefix_cache;
  eo.async_schedule = rc.async;
  eo.check_integrity = true;
  eo.spec = rc.spec;
  auto engine = Engine::Create(runner, eo);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<RunOut> outs(cases.size());
  if (submit_step.empty()) submit_step.assign(cases.size(), 0);
  size_t next = 0;
  for (int step = 0; next < cases.size() || !(*engine)->idle(); ++step) {
    while (next < cases.size() && submit_step[next] <= step) {
      const Case& c = cases[next];
      Request r;
      r.prompt = c.prompt;
      r.params = c.params;
      r.speculative = c.speculative;
      RunOut* o = &outs[next];
      if (c.stop_on_token >= 0) {
        const int32_t stop = c.stop_on_token;
        r.stop_check = [stop](std::span<const int32_t> out) { return out.back() == stop; };
      }
      r.on_output = [o](const RequestOutput& ro) {
        o->ids.insert(o->ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
        for (const SampleResult& s : ro.samples) {
          uint32_t bits;
          std::memcpy(&bits, &s.logprob, 4);
          o->logprob_bits.push_back(bits);
        }
        if (ro.finished) o->finish = *ro.finished;
      };
      EXPECT_TRUE((*engine)->Add(std::move(r)).ok());
      ++next;
    }
    const Status s = (*engine)->Step();
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) break;
  }
  if (stats) *stats = (*engine)->stats();
  return outs;
}

std::vector<Case> Cases(int n, uint64_t seed, int vocab, int shared = 0) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> prefix(shared);
  for (int32_t& t : prefix) t = static_cast<int32_t>(2 + rng() % (vocab - 2));
  std::vector<Case> cases(n);
  for (int i = 0; i < n; ++i) {
    Case& c = cases[i];
    c.prompt = prefix;
    const int len = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) c.prompt.push_back(static_cast<int32_t>(2 + rng() % (vocab - 2)));
    c.params.max_tokens = 3 + static_cast<int>(rng() % 20);
    c.params.ignore_eos = rng() % 2 == 0;
    c.params.logprobs = true;
    c.params.seed = 100 + i;
    c.params.temperature = i % 3 == 0 ? 0.0f : (i % 3 == 1 ? 1.0f : 0.7f);
    if (i % 4 == 1) c.params.top_k = 5;
    if (i % 4 == 2) c.params.top_p = 0.8f;
    if (i % 5 == 3) {
      c.params.frequency_penalty = 0.5f;
      c.params.presence_penalty = 0.3f;
      c.params.repetition_penalty = 1.3f;
      c.params.logit_bias.push_back({7, 2.0f});
    }
    if (i % 6 == 4) c.params.stop_token_ids = {static_cast<int32_t>(2 + rng() % 30)};
    if (i % 7 == 5) c.params.min_tokens = 3;
    if (i % 8 == 6) c.stop_on_token = static_cast<int>(2 + rng() % 20);
    c.speculative = i % 9 != 8;  // some requests opt out
  }
  return cases;
}

void ExpectSame(const std::vector<RunOut>& a, const std::vector<RunOut>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids) << what << " request " << i;
    EXPECT_EQ(a[i].logprob_bits, b[i].logprob_bits) << what << " request " << i;
    EXPECT_EQ(a[i].finish, b[i].finish) << what << " request " << i;
  }
}

constexpr int kVocab = 64;

TEST(EngineSpecTest, PointMassDraftsGiveThePlainOutputUnderEveryPolicy) {
  const std::vector<Case> cases = Cases(40, 1, kVocab);
  SpecFakeRunner off_runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                            SpecFakeRunner::Drafter::kGreedyNoisy);
  EngineStats plain_stats;
  const std::vector<RunOut> plain = RunEngine(&off_runner, cases, RunConfig{}, &plain_stats);
  struct Policy {
    spec::SpecPolicy policy;
    int64_t fixed;
    double cost_fixed, cost_row;
  };
  for (const Policy& p :
       {Policy{spec::SpecPolicy::kFixed, 0, 0, 0}, Policy{spec::SpecPolicy::kFixed, 2, 0, 0},
        Policy{spec::SpecPolicy::kThreshold, 0, 0, 0},
        Policy{spec::SpecPolicy::kCostModel, 0, 1.0, 0.01},
        Policy{spec::SpecPolicy::kCostModel, 0, 0, 0}}) {
    for (const bool async : {true, false}) {
      SpecFakeRunner runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                            SpecFakeRunner::Drafter::kGreedyNoisy);
      RunConfig rc;
      rc.async = async;
      rc.spec.mode = spec::SpecMode::kDSpark;
      rc.spec.policy = p.policy;
      rc.spec.fixed_length = p.fixed;
      rc.spec.cost_fixed_s = p.cost_fixed;
      rc.spec.cost_per_row_s = p.cost_row;
      EngineStats stats;
      const std::vector<RunOut> spec_out = RunEngine(&runner, cases, rc, &stats);
      ExpectSame(plain, spec_out, "spec");
      EXPECT_GT(runner.speculative_calls(), 0);
      EXPECT_GT(stats.spec.accepted, 0);
      EXPECT_LT(stats.spec.accepted, stats.spec.verified);  // the noisy drafter misses some
      EXPECT_LE(stats.spec.verified, stats.spec.drafted);
      int64_t calls = 0, accepted = 0;
      for (size_t k = 0; k < stats.spec.accept_histogram.size(); ++k) {
        calls += stats.spec.accept_histogram[k];
        accepted += static_cast<int64_t>(k) * stats.spec.accept_histogram[k];
      }
      EXPECT_EQ(calls, stats.spec.verify_calls);
      EXPECT_EQ(accepted, stats.spec.accepted);
      // Every draft verified (fixed, no cap): accepted drafts save steps.
      if (p.policy == spec::SpecPolicy::kFixed && p.fixed == 0) {
        EXPECT_LT(stats.steps, plain_stats.steps);
      }
    }
  }
}

// A draft that would end the output (EOS here) is the last one verified: the drafts after it are
// never used if it is accepted. Not so where EOS does not end the output (ignore_eos, before
// min_tokens). The outputs stay the plain ones.
TEST(EngineSpecTest, NoDraftIsVerifiedPastOneThatWouldEndTheOutput) {
  struct Variant {
    bool ignore_eos;
    int64_t min_tokens;
    bool capped;
  };
  for (const Variant& v :
       {Variant{false, 0, true}, Variant{true, 0, false}, Variant{false, 40, false}}) {
    std::vector<Case> cases = Cases(12, 7, kVocab);
    for (Case& c : cases) {
      c.params = SamplingParams{};
      c.params.temperature = 0.0f;
      c.params.max_tokens = 40;
      c.params.ignore_eos = v.ignore_eos;
      c.params.min_tokens = v.min_tokens;
      c.speculative = true;
    }
    SpecFakeRunner off_runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                              SpecFakeRunner::Drafter::kGreedyNoisy);
    const std::vector<RunOut> plain = RunEngine(&off_runner, cases, RunConfig{});
    SpecFakeRunner runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                          SpecFakeRunner::Drafter::kGreedyNoisy);
    runner.eos_draft_at = 1;  // of the block of 4
    RunConfig rc;
    rc.spec.mode = spec::SpecMode::kDSpark;
    rc.spec.policy = spec::SpecPolicy::kFixed;
    rc.spec.fixed_length = 0;  // the whole block, where nothing caps it
    EngineStats stats;
    ExpectSame(plain, RunEngine(&runner, cases, rc, &stats), "eos drafts");
    ASSERT_GT(stats.spec.verify_calls, 0);
    if (v.capped) {
      EXPECT_LE(stats.spec.verified, 2 * stats.spec.verify_calls);
    } else {
      EXPECT_GT(stats.spec.verified, 3 * stats.spec.verify_calls);  // mostly the whole block
    }
  }
}

// The cost policy's gate starts closed and the first decode opportunity explores. A request with
// no room to draft (max_tokens 2: its one decode step yields its last token, as a benchmark's
// warm-up request) must not spend that exploration: the next request explores, the drafter hits,
// and drafting opens (before, it waited explore_period = 128 decode opportunities).
TEST(EngineSpecTest, ARequestWithNoRoomToDraftSpendsNoExploration) {
  std::vector<Case> cases = Cases(2, 11, kVocab);
  for (Case& c : cases) {
    c.params = SamplingParams{};
    c.params.temperature = 0.0f;
    c.params.ignore_eos = true;
    c.speculative = true;
  }
  cases[0].params.max_tokens = 2;
  cases[1].params.max_tokens = 40;
  SpecFakeRunner runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                        SpecFakeRunner::Drafter::kGreedyNoisy);
  runner.miss_period = 1 << 20;  // drafts are the target's greedy chain
  RunConfig rc;
  rc.spec.mode = spec::SpecMode::kDSpark;
  rc.spec.policy = spec::SpecPolicy::kCostModel;
  rc.spec.cost_fixed_s = 1.0;  // fixed costs: the gain gate alone, no timing
  rc.spec.cost_per_row_s = 0.01;
  EngineStats stats;
  const std::vector<RunOut> out = RunEngine(&runner, cases, rc, &stats, {0, 8});
  ASSERT_EQ(out[0].ids.size(), 2u);
  ASSERT_EQ(out[1].ids.size(), 40u);
  EXPECT_GT(stats.spec.verify_calls, 3);
  EXPECT_EQ(stats.spec.accepted, stats.spec.verified);
}

// Sampled requests (temperature 1, no truncation or penalties) with a drafter whose logits are
// the target's: coupled drafts (the sampler's draw from the drafter's logits with the verified
// token's own uniform) are the very tokens the verification draws, greedy drafts only where the
// target's draw happens to be its argmax. Both give the plain output.
TEST(EngineSpecTest, CoupledDraftsAreTheSamplersDrawsAndChangeNoOutput) {
  std::vector<Case> cases = Cases(24, 5, kVocab);
  for (Case& c : cases) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = c.params.seed;
    p.max_tokens = 24;
    p.ignore_eos = true;
    p.logprobs = true;
    c.params = p;
    c.stop_on_token = -1;
    c.speculative = true;
  }
  SpecFakeRunner off_runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                            SpecFakeRunner::Drafter::kGreedyNoisy);
  const std::vector<RunOut> plain = RunEngine(&off_runner, cases, RunConfig{});
  double rate[2] = {0, 0};
  for (const bool coupled : {false, true}) {
    SpecFakeRunner runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                          SpecFakeRunner::Drafter::kGreedyNoisy);
    runner.miss_period = 1 << 30;  // no deliberate misses
    RunConfig rc;
    rc.spec.mode = spec::SpecMode::kDSpark;
    rc.spec.policy = spec::SpecPolicy::kFixed;
    rc.spec.coupled_drafts = coupled;
    EngineStats stats;
    const std::vector<RunOut> out = RunEngine(&runner, cases, rc, &stats);
    ExpectSame(plain, out, coupled ? "coupled drafts" : "greedy drafts");
    ASSERT_GT(stats.spec.verified, 100);
    rate[coupled] = static_cast<double>(stats.spec.accepted) / stats.spec.verified;
  }
  // Greedy: p(argmax) of 64 near-uniform logits at temperature 1 (~0.03); coupled: every draft
  // is the target's draw.
  EXPECT_LT(rate[0], 0.2);
  EXPECT_GT(rate[1], 0.95);
}

// A drafter whose calls cost far more than the steps they save (2 ms against microsecond fake
// steps): the online cost model sees that speculation does not pay and stops drafting, though
// its drafts are mostly accepted (the acceptance gate alone would keep drafting every step).
TEST(EngineSpecTest, CostModelStopsDraftingWhenDraftsCostMoreThanTheyReturn) {
  std::vector<Case> cases = Cases(40, 3, kVocab);
  for (Case& c : cases) c.params.temperature = 0.0f;  // greedy: the drafts are mostly accepted
  SpecFakeRunner off_runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                            SpecFakeRunner::Drafter::kGreedyNoisy);
  EngineStats plain_stats;
  const std::vector<RunOut> plain = RunEngine(&off_runner, cases, RunConfig{}, &plain_stats);
  SpecFakeRunner runner(kVocab, 8, SpecFakeRunner::Target::kHistory,
                        SpecFakeRunner::Drafter::kGreedyNoisy);
  runner.draft_delay_us = 2000;
  runner.miss_period = 10;
  // Every request admitted at once: after the prompts, steps of decode rows only (those the
  // online cost model observes).
  RunConfig rc;
  rc.max_running = 64;
  rc.batch_tokens = 4096;
  rc.chunk = 64;
  rc.spec.mode = spec::SpecMode::kDSpark;
  rc.spec.policy = spec::SpecPolicy::kCostModel;  // step cost profiled online
  rc.spec.explore_budget = 0.0;  // explorations by count only: the acceptance gate opens
  EngineStats stats;
  ExpectSame(plain, RunEngine(&runner, cases, rc, &stats), "costly drafter");

  EXPECT_GT(stats.spec.draft_calls, 0);  // it explored
  int64_t tokens = 0;                    // decode opportunities
  for (const RunOut& r : plain) tokens += static_cast<int64_t>(r.ids.size());
  EXPECT_LT(stats.spec.draft_calls * 4, tokens)
      << stats.spec.draft_calls << " draft calls for " << tokens << " output tokens";
}

TEST(EngineSpecTest, PreemptionAndPrefixHitsChangeNothing) {
  const std::vector<Case> cases = Cases(16, 2, kVocab, /*shared=*/24);
  RunConfig off;
  off.prefix_cache = false;
  SpecFakeRunner r0(kVocab, 8, SpecFakeRunner::Target::kHistory,
                    SpecFakeRunner::Drafter::kGreedyNoisy);
  const std::vector<RunOut> plain = RunEngine(&r0, cases, off);
  RunConfig tight;
  tight.spec.mode = spec::SpecMode::kDSpark;
  tight.spec.policy = spec::SpecPolicy::kFixed;
  tight.budget_pages = 14;  // a few sequences' worth: preemption
  tight.max_running = 6;
  SpecFakeRunner r1(kVocab, 8, SpecFakeRunner::Target::kHistory,
                    SpecFakeRunner::Drafter::kGreedyNoisy);
  EngineStats stats;
  std::vector<int> submit(cases.size());
  for (size_t i = 0; i < submit.size(); ++i) submit[i] = static_cast<int>(i) * 3;
  ExpectSame(plain, RunEngine(&r1, cases, tight, &stats, submit), "tight");
  EXPECT_GT(stats.preemptions, 0);
  EXPECT_GT(stats.kv.prefix_hits, 0);
  EXPECT_GT(stats.spec.accepted, 0);
}

// Drafts sampled from q: the emitted tokens follow the target p (fixed logits, temperature 1),
// not q. Chi-square with 7 degrees of freedom; 24.3 is the 0.1% point.
TEST(EngineSpecTest, SampledDraftsFollowTheTargetDistribution) {
  constexpr int kV = 8;
  SpecFakeRunner runner(kV, 8, SpecFakeRunner::Target::kFixed, SpecFakeRunner::Drafter::kSampled,
                        /*block=*/4);
  runner.fixed_logits = {2.0f, 0.1f, 1.0f, -1.0f, 0.5f, 1.5f, -0.5f, 0.0f};
  runner.draft_q = {0.05f, 0.3f, 0.05f, 0.2f, 0.1f, 0.05f, 0.2f, 0.05f};  // unlike p
  std::vector<double> p(kV);
  double z = 0.0;
  for (int v = 0; v < kV; ++v) z += p[v] = std::exp(static_cast<double>(runner.fixed_logits[v]));
  for (double& v : p) v /= z;
  std::vector<Case> cases(600);
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].prompt = {3, static_cast<int32_t>(i % kV)};
    cases[i].params.temperature = 1.0f;
    cases[i].params.max_tokens = 12;
    cases[i].params.ignore_eos = true;
    cases[i].params.seed = 7000 + i;
  }
  RunConfig rc;
  rc.max_running = 64;
  rc.batch_tokens = 512;
  rc.spec.mode = spec::SpecMode::kDSpark;
  rc.spec.policy = spec::SpecPolicy::kFixed;
  EngineStats stats;
  const std::vector<RunOut> outs = RunEngine(&runner, cases, rc, &stats);
  std::vector<int64_t> count(kV, 0);
  int64_t n = 0;
  for (const RunOut& o : outs) {
    ASSERT_EQ(o.ids.size(), 12u);
    for (int32_t t : o.ids) {
      ++count[t];
      ++n;
    }
  }
  double chi2 = 0.0, chi2_q = 0.0;
  for (int v = 0; v < kV; ++v) {
    const double e = p[v] * n, eq = runner.draft_q[v] * n;
    chi2 += (count[v] - e) * (count[v] - e) / e;
    chi2_q += (count[v] - eq) * (count[v] - eq) / eq;
  }
  EXPECT_LT(chi2, 24.3) << "n = " << n;
  EXPECT_GT(chi2_q, 1000.0);  // and the test can tell p from q
  // Both branches ran: accepted drafts and rejections with residual draws.
  EXPECT_GT(stats.spec.accepted, n / 10);
  EXPECT_LT(stats.spec.accepted, stats.spec.verified);
}

}  // namespace
}  // namespace deepinfer::engine
