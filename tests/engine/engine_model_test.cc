// The engine on the real model (v41-tiny-a fixture, both index-key modes): a mixed batch gives
// every request what it gets alone, a prefix-cache hit equals a cold run (remainders of 1, 2 and
// many rows, at and around page boundaries, a follow-up turn over an earlier output), and
// preemption changes nothing. The check is bitwise on the reported logprob of every output token
// (log_softmax of the logits), and the greedy tokens are checked against a direct Model::Forward
// loop (one prefill, then one decode step per token: the reference's semantics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "fixture_model.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::engine {
namespace {

struct Out {
  std::vector<int32_t> ids;
  std::vector<uint32_t> logprob_bits;
  int64_t prefix_hit = 0;
  FinishReason finish = FinishReason::kError;
};

// A request that records its output (ids, logprob bits, prefix hit, finish) into *o.
Request Recorded(const std::vector<int32_t>& prompt, float temperature, int max_tokens, Out* o) {
  Request r;
  r.prompt = prompt;
  r.params.temperature = temperature;
  r.params.seed = 1234;  // every copy of a prompt draws the same random stream
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.params.logprobs = true;
  r.on_output = [o](const RequestOutput& ro) {
    o->ids.insert(o->ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
    for (const SampleResult& s : ro.samples) {
      uint32_t bits;
      std::memcpy(&bits, &s.logprob, 4);
      o->logprob_bits.push_back(bits);
    }
    o->prefix_hit = ro.prefix_hit_tokens;
    if (ro.finished) o->finish = *ro.finished;
  };
  return r;
}

class EngineModelTest : public testing::FixtureModelModeTest {
 protected:
  static std::vector<std::vector<int32_t>> Prompts(int n, uint64_t seed, int shared = 0) {
    return RandomPrompts(n, seed, shared, /*max_len=*/70, /*id_margin=*/3);
  }

  // A runner in this suite's mode (pages of 8 positions) and an engine on it.
  struct Harness {
    std::unique_ptr<DeepSeekRunner> runner;
    std::unique_ptr<Engine> engine;
  };
  Harness Make(int64_t budget_pages, int64_t max_running, int64_t chunk, bool prefix_cache) {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = GetParam();
    ro.page_tokens = 8;
    auto runner = DeepSeekRunner::Create(model_, ro);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    EngineOptions eo;
    eo.kv_budget_bytes =
        budget_pages * (*runner)->page_bytes() + max_running * (*runner)->sequence_bytes();
    eo.scheduler.max_running = max_running;
    eo.scheduler.prefill_chunk = chunk;
    eo.scheduler.max_batch_tokens = 48;
    eo.prefix_cache = prefix_cache;
    eo.check_integrity = true;
    auto engine = Engine::Create(runner->get(), eo, &model_->pool());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return {std::move(*runner), std::move(*engine)};
  }

  // Runs the prompts (greedy, max_tokens each) through one engine, submitted at `submit_step`
  // (request i enters before step submit_step[i]).
  std::vector<Out> Run(const std::vector<std::vector<int32_t>>& prompts, int max_tokens,
                       int64_t budget_pages, int64_t max_running, int64_t chunk, bool prefix_cache,
                       std::vector<int> submit_step = {}, EngineStats* stats = nullptr) {
    Harness h = Make(budget_pages, max_running, chunk, prefix_cache);
    Engine* engine = h.engine.get();
    std::vector<Out> outs(prompts.size());
    if (submit_step.empty()) submit_step.assign(prompts.size(), 0);
    size_t next = 0;
    for (int step = 0; next < prompts.size() || !engine->idle(); ++step) {
      while (next < prompts.size() && submit_step[next] <= step) {
        Request r = Recorded(prompts[next], 0.0f, max_tokens, &outs[next]);
        EXPECT_TRUE(engine->Add(std::move(r)).ok());
        ++next;
      }
      const Status s = engine->Step();
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (!s.ok()) break;
    }
    if (stats) *stats = engine->stats();
    return outs;
  }

  // Greedy tokens by a plain loop over Model::Forward: one-shot prefill, then decode.
  std::vector<int32_t> Direct(const std::vector<int32_t>& prompt, int max_tokens) {
    model::SequenceState s = model_->NewSequence();
    model::ForwardOptions opt;
    opt.index_key_mode = GetParam();
    std::vector<int32_t> out, feed = prompt;
    for (int i = 0; i < max_tokens; ++i) {
      model::ForwardInput in{&s, feed};
      model::ForwardOutput fo;
      EXPECT_TRUE(model_->Forward(std::span(&in, 1), opt, &fo).ok());
      const auto it = std::max_element(fo.logits.begin(), fo.logits.end());  // first max
      out.push_back(static_cast<int32_t>(it - fo.logits.begin()));
      feed = {out.back()};
    }
    return out;
  }
};

TEST_P(EngineModelTest, MixedBatchEqualsEachRequestAloneAndTheDirectLoop) {
  const auto prompts = Prompts(10, 3);
  const std::vector<Out> batched = Run(prompts, 5, 1024, 4, 11, false);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<Out> alone = Run({prompts[i]}, 5, 1024, 1, 1 << 20, false);
    EXPECT_EQ(batched[i].ids, alone[0].ids) << "request " << i;
    EXPECT_EQ(batched[i].logprob_bits, alone[0].logprob_bits) << "request " << i;
    EXPECT_EQ(batched[i].ids, Direct(prompts[i], 5)) << "request " << i;
    EXPECT_EQ(batched[i].finish, FinishReason::kLength);
  }
}

TEST_P(EngineModelTest, PrefixHitEqualsColdRun) {
  const auto prompts = Prompts(4, 5, /*shared=*/45);
  EngineStats stats;
  // Request 0 runs first; the others arrive once it has finished and hit its pages.
  const std::vector<Out> warm = Run(prompts, 4, 1024, 4, 16, true, {0, 40, 40, 41}, &stats);
  EXPECT_GT(stats.kv.prefix_hits, 0);
  for (size_t i = 1; i < prompts.size(); ++i) {
    EXPECT_EQ(warm[i].prefix_hit, 40) << "request " << i;  // 5 full pages of 8 positions
    const std::vector<Out> cold = Run({prompts[i]}, 4, 1024, 1, 16, false);
    EXPECT_EQ(warm[i].ids, cold[0].ids) << "request " << i;
    EXPECT_EQ(warm[i].logprob_bits, cold[0].logprob_bits) << "request " << i;
  }
}

TEST_P(EngineModelTest, PrefixHitRemaindersEqualColdRun) {
  // Past 2 x index_topk (16) positions, where official decode semantics differ from prefill: a
  // hit leaves 1, 2, 8 or 31 prompt rows to compute, at and around the page boundary of 48/56.
  const auto base = RandomPrompts(1, 77, 64, 1, 3)[0];
  std::vector<std::vector<int32_t>> prompts = {base};  // 65 tokens: its pages are the cache
  std::vector<int64_t> expect_hit = {0};
  for (const auto& [len, hit] :
       std::vector<std::pair<int, int64_t>>{{49, 48}, {50, 48}, {56, 48}, {57, 56}, {58, 56}}) {
    prompts.emplace_back(base.begin(), base.begin() + len);
    expect_hit.push_back(hit);
  }
  std::vector<int32_t> diverging(base.begin(), base.begin() + 48);
  const std::vector<int32_t> own = RandomPrompts(1, 78, 30, 1, 3)[0];
  diverging.insert(diverging.end(), own.begin(), own.end());
  prompts.push_back(diverging);  // 48 shared, then 31 of its own
  expect_hit.push_back(48);
  std::vector<int> submit(prompts.size(), 40);
  submit[0] = 0;
  const std::vector<Out> warm = Run(prompts, 6, 1024, 8, 16, true, submit);
  for (size_t i = 1; i < prompts.size(); ++i) {
    EXPECT_EQ(warm[i].prefix_hit, expect_hit[i]) << "prompt of " << prompts[i].size();
    const std::vector<Out> cold = Run({prompts[i]}, 6, 1024, 1, 16, false);
    EXPECT_EQ(warm[i].ids, cold[0].ids) << "prompt of " << prompts[i].size();
    EXPECT_EQ(warm[i].logprob_bits, cold[0].logprob_bits) << "prompt of " << prompts[i].size();
    EXPECT_EQ(warm[i].ids, Direct(prompts[i], 6)) << "prompt of " << prompts[i].size();
  }
}

TEST_P(EngineModelTest, FollowUpTurnOverAnEarlierOutputEqualsColdRun) {
  // Turn 2's prompt holds turn 1's prompt and output. In official mode the output positions were
  // decode rows in turn 1 but are prompt rows in turn 2, so only the pages wholly inside turn 1's
  // prompt may be reused; in owner mode every complete page is.
  Harness h = Make(1024, 4, 16, true);
  const std::vector<int32_t> first = RandomPrompts(1, 91, 20, 1, 3)[0];  // 21 tokens
  Out a;
  ASSERT_TRUE(h.engine->Add(Recorded(first, 0.0f, 30, &a)).ok());
  while (!h.engine->idle()) ASSERT_TRUE(h.engine->Step().ok());
  std::vector<int32_t> second = first;
  second.insert(second.end(), a.ids.begin(), a.ids.end());  // 51 tokens, 48 computed by turn 1
  const std::vector<int32_t> new_turn = RandomPrompts(1, 92, 9, 1, 3)[0];
  second.insert(second.end(), new_turn.begin(), new_turn.end());
  Out b;
  ASSERT_TRUE(h.engine->Add(Recorded(second, 0.0f, 6, &b)).ok());
  while (!h.engine->idle()) ASSERT_TRUE(h.engine->Step().ok());
  EXPECT_EQ(b.prefix_hit, GetParam() == model::IndexKeyMode::kOwner ? 48 : 16);
  const std::vector<Out> cold = Run({second}, 6, 1024, 1, 16, false);
  EXPECT_EQ(b.ids, cold[0].ids);
  EXPECT_EQ(b.logprob_bits, cold[0].logprob_bits);
  EXPECT_EQ(b.ids, Direct(second, 6));
}

TEST_P(EngineModelTest, PreemptionChangesNoOutput) {
  const auto prompts = Prompts(8, 9);
  EngineStats stats;
  const std::vector<Out> tight = Run(prompts, 6, 14, 4, 8, false, {}, &stats);
  const std::vector<Out> roomy = Run(prompts, 6, 1024, 4, 8, false);
  EXPECT_GT(stats.preemptions, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(tight[i].ids, roomy[i].ids) << "request " << i;
    EXPECT_EQ(tight[i].logprob_bits, roomy[i].logprob_bits) << "request " << i;
  }
}

// The Thinking Machines experiment: 100 identical requests under concurrency (mixed with other
// traffic, chunked at several sizes, admitted at different steps so their batches differ) give
// one unique completion, at temperature 0 and seeded at temperature 1.
TEST_P(EngineModelTest, HundredIdenticalRequestsGiveOneCompletion) {
  const auto prompts = Prompts(1, 21);
  const auto noise = Prompts(20, 22);
  for (const float temperature : {0.0f, 1.0f}) {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = GetParam();
    ro.page_tokens = 8;
    auto runner = DeepSeekRunner::Create(model_, ro);
    ASSERT_TRUE(runner.ok());
    EngineOptions eo;
    eo.kv_budget_bytes = int64_t{128} << 20;
    eo.scheduler.max_running = 64;
    eo.scheduler.prefill_chunk = 5;
    eo.scheduler.max_batch_tokens = 96;
    auto engine = Engine::Create(runner->get(), eo, &model_->pool());
    ASSERT_TRUE(engine.ok());
    std::vector<Out> outs(100), noise_outs(noise.size());
    std::mt19937 rng(3);
    size_t next = 0, next_noise = 0;
    while (next < outs.size() || !(*engine)->idle()) {
      // A few requests of each kind enter at every step.
      for (int k = 0; k < 7 && next < outs.size(); ++k, ++next) {
        Request r = Recorded(prompts[0], temperature, 8, &outs[next]);
        ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
      }
      if (next_noise < noise.size() && rng() % 2) {
        Request r;
        r.prompt = noise[next_noise];
        r.params.temperature = 1.0f;
        r.params.max_tokens = 1 + rng() % 12;
        Out* o = &noise_outs[next_noise++];
        r.on_output = [o](const RequestOutput& ro) {
          o->ids.insert(o->ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
        };
        ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
      }
      ASSERT_TRUE((*engine)->Step().ok());
    }
    std::set<std::vector<int32_t>> unique_ids;
    std::set<std::vector<uint32_t>> unique_logprobs;
    for (const Out& o : outs) {
      EXPECT_EQ(o.ids.size(), 8u);
      unique_ids.insert(o.ids);
      unique_logprobs.insert(o.logprob_bits);
    }
    EXPECT_EQ(unique_ids.size(), 1u) << "temperature " << temperature;
    EXPECT_EQ(unique_logprobs.size(), 1u) << "temperature " << temperature;
  }
}

DEEPINFER_BOTH_INDEX_KEY_MODES(EngineModelTest);

}  // namespace
}  // namespace deepinfer::engine
