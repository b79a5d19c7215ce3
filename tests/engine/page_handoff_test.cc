// The KV hand-off (engine/page_handoff.h) on the real model (v41-tiny-a, both index-key modes):
// pages exported from one engine after a prompt and imported into another make the second
// engine's run of that prompt a prefix hit whose outputs equal a cold colocated run bit for bit
// (ids and logprob bits; greedy and seeded sampling); a corrupt page, a wrong fingerprint or
// layout, and a bundle cut short change nothing; a pool too small keeps the chain's head and drops
// its tail; the receiver's page pool stays consistent (CheckIntegrity after every step).
// With a prefill leg's sequence tail (all of a prompt but its last token, the partial page and the
// per-sequence state) the receiver computes one position and its outputs are still a cold
// colocated run's, at prompt lengths on and off page boundaries, with DSpark on, with the pages
// already cached; a corrupt tail changes nothing; a tail for another prompt is not used; a tail
// carrying prompt logprobs (context parallelism) continues only a request asking for its k.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "engine/page_handoff.h"
#include "fixture_model.h"
#include "handoff_util.h"

namespace deepinfer::engine {
namespace {

using testing::HandoffRun;

constexpr char kHandoffPrint[] = "test-fingerprint";

class PageHandoffTest : public testing::FixtureModelModeTest {
 protected:
  struct Harness {
    std::unique_ptr<DeepSeekRunner> runner;
    std::unique_ptr<Engine> engine;
  };
  Harness Make(int64_t budget_pages, int64_t page_tokens = 8, spec::SpecOptions so = {}) {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = GetParam();
    ro.page_tokens = page_tokens;
    auto runner = DeepSeekRunner::Create(model_, ro);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    EngineOptions eo;
    eo.kv_budget_bytes = budget_pages * (*runner)->page_bytes() + 2 * (*runner)->sequence_bytes();
    eo.scheduler.max_running = 2;
    eo.scheduler.prefill_chunk = 16;
    eo.check_integrity = true;
    eo.spec = so;
    auto engine = Engine::Create(runner->get(), eo, &model_->pool());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return {std::move(*runner), std::move(*engine)};
  }

  static HandoffRun Run(Engine* engine, const std::vector<int32_t>& prompt, float temperature) {
    return testing::RunToEnd(engine, prompt, temperature, 77, 6);
  }

  // A prefill engine's bundle of `prompt` after it ran (max_tokens 1, as a prefill instance).
  PageBundle Prefill(const std::vector<int32_t>& prompt) {
    Harness p = Make(64);
    HandoffRun first;
    Request r;
    r.prompt = prompt;
    r.params.max_tokens = 1;
    r.on_output = [&first](const RequestOutput& ro) {
      first.ids.insert(first.ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
    };
    EXPECT_TRUE(p.engine->Add(std::move(r)).ok());
    EXPECT_TRUE(p.engine->RunUntilIdle().ok());
    auto bundle = p.engine->ExportPromptPages(prompt, kHandoffPrint);
    EXPECT_TRUE(bundle.ok()) << bundle.status().ToString();
    return std::move(*bundle);
  }

  // A prefill leg's bundle: all of `prompt` but its last token, with the sequence's tail.
  PageBundle PrefillLeg(const std::vector<int32_t>& prompt, spec::SpecOptions so = {}) {
    Harness p = Make(64, 8, so);
    return testing::PrefillLegBundle(p.engine.get(), prompt, kHandoffPrint);
  }
};

spec::SpecOptions DSpark() {
  spec::SpecOptions so;
  so.mode = spec::SpecMode::kDSpark;
  so.policy = spec::SpecPolicy::kFixed;
  so.min_gain = 0.0;
  return so;
}

TEST_P(PageHandoffTest, ATailLeavesOnePositionAndKeepsTheBits) {
  // 44: 43 positions = 5 pages + 3; 41: 40 = 5 pages exactly; 2: one position, no page; 9: one
  // page + 0; 13: one page + 4.
  for (const int len : {44, 41, 2, 9, 13}) {
    const std::vector<int32_t> prompt = RandomPrompts(1, 100 + len, len - 1, 1, 3)[0];
    ASSERT_EQ(static_cast<int>(prompt.size()), len);
    for (const bool dspark : {false, true}) {
      const spec::SpecOptions so = dspark ? DSpark() : spec::SpecOptions{};
      const PageBundle bundle = PrefillLeg(prompt, so);
      EXPECT_EQ(static_cast<int>(bundle.blocks.size()), (len - 1) / 8);
      EXPECT_EQ(bundle.tail->partial_page.empty(), (len - 1) % 8 == 0);
      auto wire = DecodeBundle(EncodeBundle(bundle));
      ASSERT_TRUE(wire.ok()) << wire.status().ToString();
      for (float temperature : {0.0f, 0.9f}) {
        const std::string what = "len " + std::to_string(len) + " dspark " +
                                 std::to_string(dspark) + " temperature " +
                                 std::to_string(temperature);
        Harness cold = Make(64, 8, so);
        const HandoffRun colocated = Run(cold.engine.get(), prompt, temperature);
        Harness d = Make(64, 8, so);
        auto imported = d.engine->ImportPages(*wire, kHandoffPrint);
        ASSERT_TRUE(imported.ok()) << imported.status().ToString();
        EXPECT_TRUE(imported->tail_held);
        EXPECT_EQ(d.engine->held_tails(), 1);
        const HandoffRun handed = Run(d.engine.get(), prompt, temperature);
        EXPECT_EQ(handed.prefix_hit, len - 1) << what;
        EXPECT_EQ(d.engine->held_tails(), 0) << what;
        EXPECT_EQ(handed.ids, colocated.ids) << what;
        EXPECT_EQ(handed.logprob_bits, colocated.logprob_bits) << what;
        // The same hand-off again, its pages now cached here: the tail still carries the rest.
        imported = d.engine->ImportPages(*wire, kHandoffPrint);
        ASSERT_TRUE(imported.ok());
        EXPECT_EQ(imported->imported, 0);
        const HandoffRun again = Run(d.engine.get(), prompt, temperature);
        EXPECT_EQ(again.prefix_hit, len - 1) << what;
        EXPECT_EQ(again.ids, colocated.ids) << what;
        EXPECT_EQ(again.logprob_bits, colocated.logprob_bits) << what;
        EXPECT_TRUE(d.engine->CheckIntegrity().ok());
      }
    }
  }
}

TEST_P(PageHandoffTest, ABadOrForeignTailChangesNothing) {
  const std::vector<int32_t> prompt = RandomPrompts(1, 17, 20, 1, 3)[0];  // 21 tokens
  const PageBundle bundle = PrefillLeg(prompt);
  ASSERT_EQ(bundle.blocks.size(), 2u);
  Harness d = Make(64);
  PageBundle corrupt = bundle;
  auto bad = std::make_shared<SequenceTail>(*bundle.tail);
  bad->state[bad->state.size() / 2] ^= 1;
  corrupt.tail = bad;
  auto r = d.engine->ImportPages(corrupt, kHandoffPrint);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("tail"), std::string::npos) << r.status().message();
  EXPECT_EQ(d.engine->kv().counters().cached, 0);  // no page either
  EXPECT_EQ(d.engine->held_tails(), 0);

  // A tail that does not fit its pages (one page missing) is refused too.
  PageBundle short_chain = bundle;
  short_chain.blocks.pop_back();
  EXPECT_EQ(d.engine->ImportPages(short_chain, kHandoffPrint).status().code(),
            StatusCode::kDataLoss);

  // Cut short on the wire.
  const std::string wire = EncodeBundle(bundle);
  EXPECT_EQ(DecodeBundle(wire.substr(0, wire.size() - 9)).status().code(), StatusCode::kDataLoss);

  // Held, but the request's prompt differs inside the tail's partial page, or has one token
  // more: the tail is not used (an ordinary prefix hit of the complete pages) and the bits are a
  // cold run's.
  ASSERT_TRUE(d.engine->ImportPages(bundle, kHandoffPrint).ok());
  // `other` on the receiver: a cold run's bits, `hit` positions served, `held` tails left.
  auto expect_cold_bits = [&](const std::vector<int32_t>& other, int64_t hit, int64_t held) {
    Harness cold_other = Make(64);
    const HandoffRun other_cold = Run(cold_other.engine.get(), other, 0.0f);
    const HandoffRun other_handed = Run(d.engine.get(), other, 0.0f);
    EXPECT_EQ(other_handed.prefix_hit, hit);
    EXPECT_EQ(other_handed.ids, other_cold.ids);
    EXPECT_EQ(other_handed.logprob_bits, other_cold.logprob_bits);
    EXPECT_EQ(d.engine->held_tails(), held);
  };
  std::vector<int32_t> inside = prompt;
  inside[18] = inside[18] == 5 ? 6 : 5;
  expect_cold_bits(inside, 16, 1);
  std::vector<int32_t> longer = prompt;
  longer.push_back(7);
  expect_cold_bits(longer, 16, 1);
  // Only the last token differs: the tail holds every position before it, so it is used, and
  // the bits are that prompt's cold run's.
  std::vector<int32_t> last = prompt;
  last.back() = last.back() == 5 ? 6 : 5;
  expect_cold_bits(last, 20, 0);
  EXPECT_TRUE(d.engine->CheckIntegrity().ok());
}

TEST_P(PageHandoffTest, ALegIsAPromptsHeadWithOneSample) {
  Harness p = Make(64);
  Request r;
  r.prompt = {5, 6, 7};
  r.leg_of_prompt_len = 5;
  EXPECT_EQ(p.engine->Add(r).status().code(), StatusCode::kInvalidArgument);
  r.leg_of_prompt_len = 4;
  r.params.n = 2;
  EXPECT_EQ(p.engine->Add(r).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(PageHandoffTest, ImportedPagesGiveAColocatedRunsBits) {
  const std::vector<int32_t> long_prompt = RandomPrompts(1, 12, 43, 1, 3)[0];  // 44 tokens: 5 pages
  ASSERT_EQ(long_prompt.size(), 44u);
  const PageBundle bundle = Prefill(long_prompt);
  ASSERT_EQ(bundle.blocks.size(), 5u);  // the partial sixth page stays behind
  // Through the wire form, as between instances.
  auto wire = DecodeBundle(EncodeBundle(bundle));
  ASSERT_TRUE(wire.ok()) << wire.status().ToString();

  for (float temperature : {0.0f, 0.9f}) {
    Harness cold = Make(64);
    const HandoffRun colocated = Run(cold.engine.get(), long_prompt, temperature);
    Harness d = Make(64);
    auto imported = d.engine->ImportPages(*wire, kHandoffPrint);
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    EXPECT_EQ(imported->imported, 5);
    EXPECT_EQ(imported->cached, 0);
    EXPECT_TRUE(d.engine->CheckIntegrity().ok());
    const HandoffRun handed = Run(d.engine.get(), long_prompt, temperature);
    EXPECT_EQ(handed.prefix_hit, 40);
    EXPECT_EQ(colocated.prefix_hit, 0);
    EXPECT_EQ(handed.ids, colocated.ids) << "temperature " << temperature;
    EXPECT_EQ(handed.logprob_bits, colocated.logprob_bits) << "temperature " << temperature;
    // A second import of the same pages finds them cached.
    auto again = d.engine->ImportPages(*wire, kHandoffPrint);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->imported, 0);
    EXPECT_EQ(again->cached, 5);
    EXPECT_TRUE(d.engine->CheckIntegrity().ok());
  }
}

TEST_P(PageHandoffTest, BadBundlesChangeNothing) {
  const std::vector<int32_t> prompt = RandomPrompts(1, 13, 23, 1, 3)[0];  // 24 tokens: 3 pages
  const PageBundle bundle = Prefill(prompt);
  ASSERT_EQ(bundle.blocks.size(), 3u);
  Harness d = Make(64);
  const int64_t free_before = d.engine->kv().counters().free;

  PageBundle corrupt = bundle;
  corrupt.blocks[2].bytes[100] ^= 1;
  auto r = d.engine->ImportPages(corrupt, kHandoffPrint);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("page 2 of 3"), std::string::npos) << r.status().message();

  r = d.engine->ImportPages(bundle, "another model");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("fingerprint"), std::string::npos);

  PageBundle layout = bundle;
  layout.page_tokens = 16;
  EXPECT_EQ(d.engine->ImportPages(layout, kHandoffPrint).status().code(),
            StatusCode::kInvalidArgument);

  const std::string wire = EncodeBundle(bundle);
  EXPECT_EQ(DecodeBundle(wire.substr(0, wire.size() - 1)).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeBundle("DIKX" + wire.substr(4)).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeBundle("").status().code(), StatusCode::kDataLoss);

  EXPECT_EQ(d.engine->kv().counters().free, free_before);
  EXPECT_EQ(d.engine->kv().counters().cached, 0);
  EXPECT_TRUE(d.engine->CheckIntegrity().ok());
  // A cold run afterwards is a cold run.
  EXPECT_EQ(Run(d.engine.get(), prompt, 0.0f).prefix_hit, 0);
}

TEST_P(PageHandoffTest, ASmallPoolDropsTheTail) {
  const std::vector<int32_t> prompt = RandomPrompts(1, 14, 39, 1, 3)[0];  // 40 tokens: 5 pages
  const PageBundle bundle = Prefill(prompt);
  ASSERT_EQ(bundle.blocks.size(), 5u);
  // A receiver whose pool has room for 3 pages: the first 3 blocks land, the rest is dropped.
  Harness d = Make(3);
  ASSERT_EQ(d.engine->kv().capacity(), 3);
  auto r = d.engine->ImportPages(bundle, kHandoffPrint);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->imported, 3);
  EXPECT_EQ(r->dropped, 2);
  EXPECT_EQ(d.engine->kv().counters().cached, 3);
  EXPECT_TRUE(d.engine->CheckIntegrity().ok());
}

// A tail that carries its prompt's logprobs (context parallelism scores them on the ranks that
// compute the positions: engine/context_parallel_prefill.h) continues a request asking for
// exactly that many alternatives: one position computed, the colocated run's ids, logprobs and
// prompt logprobs; a request asking for another k, or a tail without them, computes the whole
// prompt and leaves the tail held.
TEST_P(PageHandoffTest, ATailWithPromptLogprobsContinuesOnlyItsOwnK) {
  const std::vector<int32_t> prompt = RandomPrompts(1, 31, 21, 1, 3)[0];  // 22 tokens
  const auto run = [&](Engine* engine, std::optional<int32_t> k,
                       std::vector<SampleResult>* scored) {
    HandoffRun o;
    Request r;
    r.prompt = prompt;
    r.params.seed = 5;
    r.params.temperature = 0.8f;
    r.params.max_tokens = 4;
    r.params.logprobs = true;
    r.params.prompt_logprobs = k;
    r.on_output = [&](const RequestOutput& ro) {
      o.ids.insert(o.ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
      o.prefix_hit = ro.prefix_hit_tokens;
      if (!ro.prompt_logprobs.empty()) *scored = ro.prompt_logprobs;
    };
    EXPECT_TRUE(engine->Add(std::move(r)).ok());
    EXPECT_TRUE(engine->RunUntilIdle().ok());
    return o;
  };
  Harness cold = Make(64);
  std::vector<SampleResult> want;
  const HandoffRun colocated = run(cold.engine.get(), 2, &want);
  ASSERT_EQ(want.size(), prompt.size() - 1);

  PageBundle bundle = PrefillLeg(prompt);
  auto tail = std::make_shared<SequenceTail>(*bundle.tail);
  tail->prompt_logprobs_k = 2;
  tail->prompt_logprobs = want;
  bundle.tail = tail;
  Harness d = Make(64);
  ASSERT_TRUE(d.engine->ImportPages(bundle, kHandoffPrint).ok());
  std::vector<SampleResult> other;
  const HandoffRun wrong_k = run(d.engine.get(), 3, &other);
  EXPECT_EQ(wrong_k.prefix_hit, 0);
  EXPECT_EQ(d.engine->held_tails(), 1);
  std::vector<SampleResult> got;
  const HandoffRun handed = run(d.engine.get(), 2, &got);
  EXPECT_EQ(handed.prefix_hit, static_cast<int64_t>(prompt.size()) - 1);
  EXPECT_EQ(d.engine->held_tails(), 0);
  EXPECT_EQ(handed.ids, colocated.ids);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].token) << i;
    EXPECT_EQ(got[i].logprob, want[i].logprob) << i;
    EXPECT_EQ(got[i].top.size(), 2u) << i;
  }
  // A plain leg's tail (no prompt logprobs) is not taken by a request that asks for them.
  Harness e = Make(64);
  ASSERT_TRUE(e.engine->ImportPages(PrefillLeg(prompt), kHandoffPrint).ok());
  std::vector<SampleResult> full;
  const HandoffRun computed = run(e.engine.get(), 2, &full);
  EXPECT_EQ(computed.prefix_hit, 0);
  EXPECT_EQ(computed.ids, colocated.ids);
  EXPECT_EQ(full.size(), want.size());
  EXPECT_EQ(e.engine->held_tails(), 1);
  EXPECT_TRUE(d.engine->CheckIntegrity().ok());
}

DEEPINFER_BOTH_INDEX_KEY_MODES(PageHandoffTest);

}  // namespace
}  // namespace deepinfer::engine
