// DSpark speculative decoding on the real model (v41-tiny-a fixture, both index-key modes):
// greedy and seeded output with spec on equals spec off token for token (and logprob bit for
// bit) over many prompts, in a mixed batch with opted-out requests, with prefix hits (the DSpark
// rings restored from the pages' tails) and under preemption; every length policy and every
// fixed draft length, and drafts over a draft vocabulary. In official mode verify rows must keep
// one decode step's index keys each.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "fixture_model.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::engine {
namespace {

struct SpecRunOut {
  std::vector<int32_t> ids;
  std::vector<uint32_t> logprob_bits;
  int64_t prefix_hit = 0;
};

class EngineSpecModelTest : public testing::FixtureModelModeTest {
 protected:
  static std::vector<std::vector<int32_t>> Prompts(int n, uint64_t seed, int shared = 0) {
    return RandomPrompts(n, seed, shared, /*max_len=*/40, /*id_margin=*/4);
  }

  std::vector<SpecRunOut> Run(const std::vector<std::vector<int32_t>>& prompts, int max_tokens,
                              const spec::SpecOptions& so, int64_t budget_pages, bool prefix_cache,
                              std::vector<int> submit_step = {}, EngineStats* stats = nullptr,
                              float temperature = 0.0f) {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = GetParam();
    ro.page_tokens = 8;
    ro.draft_vocab = draft_vocab_;
    auto runner = DeepSeekRunner::Create(model_, ro);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    EngineOptions eo;
    const int64_t max_running = 4;
    eo.kv_budget_bytes =
        budget_pages * (*runner)->page_bytes() + max_running * (*runner)->sequence_bytes();
    eo.scheduler.max_running = max_running;
    eo.scheduler.prefill_chunk = 16;
    eo.scheduler.max_batch_tokens = 48;
    eo.prefix_cache = prefix_cache;
    eo.check_integrity = true;
    eo.spec = so;
    auto engine = Engine::Create(runner->get(), eo, &model_->pool());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    std::vector<SpecRunOut> outs(prompts.size());
    if (submit_step.empty()) submit_step.assign(prompts.size(), 0);
    size_t next = 0;
    for (int step = 0; next < prompts.size() || !(*engine)->idle(); ++step) {
      while (next < prompts.size() && submit_step[next] <= step) {
        Request r;
        r.prompt = prompts[next];
        r.params.temperature = temperature;
        r.params.seed = 99;
        r.params.max_tokens = max_tokens;
        r.params.ignore_eos = true;
        r.params.logprobs = true;
        r.speculative = next % 5 != 4;  // mixed: some requests opt out
        SpecRunOut* o = &outs[next];
        r.on_output = [o](const RequestOutput& ro) {
          o->ids.insert(o->ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
          for (const SampleResult& s : ro.samples) {
            uint32_t bits;
            std::memcpy(&bits, &s.logprob, 4);
            o->logprob_bits.push_back(bits);
          }
          o->prefix_hit = ro.prefix_hit_tokens;
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

  std::vector<int32_t> draft_vocab_;  // the runner's DSpark draft vocabulary (empty: all)

  static void ExpectSame(const std::vector<SpecRunOut>& a, const std::vector<SpecRunOut>& b,
                         const std::string& what) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].ids, b[i].ids) << what << " request " << i;
      EXPECT_EQ(a[i].logprob_bits, b[i].logprob_bits) << what << " request " << i;
    }
  }
};

spec::SpecOptions Spec(spec::SpecPolicy policy) {
  spec::SpecOptions so;
  so.mode = spec::SpecMode::kDSpark;
  so.policy = policy;
  so.threshold = 0.2f;
  so.cost_fixed_s = 1.0;  // a fixed cost model: decisions do not depend on timing
  so.cost_per_row_s = 0.001;
  so.min_gain = 0.0;  // keep drafting even though random weights accept little
  return so;
}

TEST_P(EngineSpecModelTest, GreedyMixedBatchEqualsSpecOff) {
  const auto prompts = Prompts(12, 31);
  const std::vector<SpecRunOut> off = Run(prompts, 10, spec::SpecOptions{}, 1024, false);
  for (const spec::SpecPolicy policy :
       {spec::SpecPolicy::kFixed, spec::SpecPolicy::kThreshold, spec::SpecPolicy::kCostModel}) {
    EngineStats stats;
    const std::vector<SpecRunOut> on = Run(prompts, 10, Spec(policy), 1024, false, {}, &stats);
    ExpectSame(off, on, "policy " + std::to_string(static_cast<int>(policy)));
    EXPECT_GT(stats.spec.draft_calls, 0);
    if (policy == spec::SpecPolicy::kFixed) EXPECT_GT(stats.spec.verified, 0);
  }
}

TEST_P(EngineSpecModelTest, SampledOutputEqualsSpecOff) {
  // Greedy drafts are point masses: the verified token is the sampler's own draw.
  const auto prompts = Prompts(6, 37);
  const std::vector<SpecRunOut> off =
      Run(prompts, 8, spec::SpecOptions{}, 1024, false, {}, nullptr, 1.0f);
  EngineStats stats;
  const std::vector<SpecRunOut> on =
      Run(prompts, 8, Spec(spec::SpecPolicy::kFixed), 1024, false, {}, &stats, 1.0f);
  ExpectSame(off, on, "sampled");
  EXPECT_GT(stats.spec.verified, 0);
}

TEST_P(EngineSpecModelTest, EveryFixedDraftLengthEqualsSpecOff) {
  // Contexts up to 56 positions (past 2 x index_topk), 16 new tokens, drafting forced.
  const auto prompts = Prompts(8, 47);
  for (const float temperature : {0.0f, 1.0f}) {
    const std::vector<SpecRunOut> off =
        Run(prompts, 16, spec::SpecOptions{}, 1024, false, {}, nullptr, temperature);
    for (int64_t length = 1; length <= model_->config().dspark_block_size; ++length) {
      spec::SpecOptions so = Spec(spec::SpecPolicy::kFixed);
      so.fixed_length = length;
      EngineStats stats;
      const std::vector<SpecRunOut> on = Run(prompts, 16, so, 1024, false, {}, &stats, temperature);
      ExpectSame(
          off, on,
          "temperature " + std::to_string(temperature) + " length " + std::to_string(length));
      EXPECT_GT(stats.spec.verified, 0);
    }
  }
}

TEST_P(EngineSpecModelTest, PrefixHitsAndPreemptionEqualSpecOff) {
  const auto prompts = Prompts(5, 41, /*shared=*/35);
  const std::vector<int> submit = {0, 30, 30, 31, 32};
  const std::vector<SpecRunOut> off = Run(prompts, 8, spec::SpecOptions{}, 1024, false, submit);
  EngineStats stats;
  const std::vector<SpecRunOut> warm =
      Run(prompts, 8, Spec(spec::SpecPolicy::kFixed), 1024, true, submit, &stats);
  EXPECT_GT(stats.kv.prefix_hits, 0);
  EXPECT_EQ(warm[1].prefix_hit, 32);
  ExpectSame(off, warm, "prefix");
  EngineStats tight_stats;
  const std::vector<SpecRunOut> tight =
      Run(Prompts(8, 43), 8, Spec(spec::SpecPolicy::kFixed), 9, false, {}, &tight_stats);
  EXPECT_GT(tight_stats.preemptions, 0);
  ExpectSame(Run(Prompts(8, 43), 8, spec::SpecOptions{}, 1024, false), tight, "preempted");
}

TEST_P(EngineSpecModelTest, DraftVocabularyLeavesOutputsUnchanged) {
  // Drafts ranked over every third id only: other drafts, the same outputs.
  const auto prompts = Prompts(6, 53);
  for (int32_t id = 0; id < model_->config().vocab_size; id += 3) draft_vocab_.push_back(id);
  for (const float temperature : {0.0f, 1.0f}) {
    const std::vector<SpecRunOut> off =
        Run(prompts, 12, spec::SpecOptions{}, 1024, false, {}, nullptr, temperature);
    EngineStats stats;
    const std::vector<SpecRunOut> on =
        Run(prompts, 12, Spec(spec::SpecPolicy::kFixed), 1024, false, {}, &stats, temperature);
    ExpectSame(off, on, "draft vocabulary, temperature " + std::to_string(temperature));
    EXPECT_GT(stats.spec.verified, 0);
  }
}

DEEPINFER_BOTH_INDEX_KEY_MODES(EngineSpecModelTest);

}  // namespace
}  // namespace deepinfer::engine
