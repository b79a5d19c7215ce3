// engine::ContextParallelPrefill on the v41-tiny-a fixture with the ranks as threads (each its own
// loaded model, runner and engine, DSpark on): the decoding rank, any rank of the group, ends with
// the tail a one-process prefill leg of the same prompt captures, its state byte for byte (window
// and DSpark rings, partial groups, Engram look-back) and every complete page's bytes; its request
// then continues it (one position) with a colocated run's ids and logprob bits, and verifies and
// accepts the drafts the leg's continuation does. Prompts on and off page boundaries, last chunks
// shorter than the DSpark window, 2 and 3 ranks, both index-key modes.
#include "engine/context_parallel_prefill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../model/thread_exchange.h"
#include "core/thread_pool.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "fixture_model.h"
#include "handoff_util.h"

namespace deepinfer::engine {
namespace {

constexpr char kPrint[] = "cp-test";

struct Rank {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<DeepSeekRunner> runner;
  std::unique_ptr<Engine> engine;
};

using Outputs = testing::HandoffRun;

class ContextParallelPrefillTest : public ::testing::TestWithParam<model::IndexKeyMode> {
 protected:
  Rank Make(int64_t page_tokens) const {
    Rank r;
    r.pool = std::make_unique<ThreadPool>(1);
    model::LoadOptions lo;
    lo.pool = r.pool.get();
    auto m = model::Model::Load(testing::kFixtureDir, lo);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    r.model = std::move(*m);
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = GetParam();
    ro.page_tokens = page_tokens;
    auto runner = DeepSeekRunner::Create(r.model.get(), ro);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    r.runner = std::move(*runner);
    EngineOptions eo;
    eo.kv_budget_bytes = 64 * r.runner->page_bytes() + 2 * r.runner->sequence_bytes();
    eo.scheduler.max_running = 2;
    eo.scheduler.prefill_chunk = 16;
    eo.check_integrity = true;
    eo.spec.mode = spec::SpecMode::kDSpark;
    eo.spec.policy = spec::SpecPolicy::kFixed;
    eo.spec.fixed_length = 2;
    eo.spec.min_gain = 0.0;
    auto engine = Engine::Create(r.runner.get(), eo, r.pool.get());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    r.engine = std::move(*engine);
    return r;
  }

  static Outputs Run(Engine* engine, const std::vector<int32_t>& prompt) {
    return testing::RunToEnd(engine, prompt, 0.9f, 13, 8);
  }

  // A one-process prefill leg of `prompt`: its tail and complete pages.
  PageBundle Leg(const std::vector<int32_t>& prompt, int64_t page_tokens) const {
    Rank p = Make(page_tokens);
    return testing::PrefillLegBundle(p.engine.get(), prompt, kPrint);
  }
};

std::vector<int32_t> Prompt(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, 500);
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (auto& t : p) t = id(rng);
  return p;
}

TEST_P(ContextParallelPrefillTest, TheDecodingRankHoldsAOneProcessLegsTail) {
  // (ranks, chunks per rank, decoding rank, prompt length, page length): the fixture's window is
  // 16 positions (DSpark's too); pages of 8 make the last chunk shorter than it.
  struct Case {
    int ranks, per_rank, decoder;
    int64_t len, page;
  };
  for (const Case c :
       {Case{2, 3, 0, 60, 8}, Case{2, 2, 1, 41, 8}, Case{3, 1, 1, 100, 16}, Case{3, 2, 2, 33, 8}}) {
    const std::string what = std::to_string(c.ranks) + " ranks, " + std::to_string(c.len) +
                             " tokens, decoder " + std::to_string(c.decoder);
    const std::vector<int32_t> prompt = Prompt(c.len, static_cast<uint32_t>(c.len));
    std::vector<Rank> ranks;
    for (int r = 0; r < c.ranks; ++r) ranks.push_back(Make(c.page));
    model::Mailbox box;
    std::vector<StatusOr<ContextParallelReport>> reports(static_cast<size_t>(c.ranks),
                                                         Internal("not run"));
    std::vector<std::thread> threads;
    for (int r = 0; r < c.ranks; ++r) {
      threads.emplace_back([&, r] {
        model::ThreadExchange ex(&box, r, c.ranks);
        Rank& me = ranks[static_cast<size_t>(r)];
        reports[static_cast<size_t>(r)] =
            ContextParallelPrefill(*me.runner, *me.engine, prompt, std::nullopt, c.decoder, ex,
                                   {.chunks_per_rank = c.per_rank});
      });
    }
    for (std::thread& t : threads) t.join();
    for (const auto& r : reports) ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
    const ContextParallelReport& dr = *reports[static_cast<size_t>(c.decoder)];
    ASSERT_NE(dr.tail, nullptr) << what;
    EXPECT_TRUE(dr.import.tail_held) << what;
    for (int r = 0; r < c.ranks; ++r) {
      if (r != c.decoder) EXPECT_EQ(reports[static_cast<size_t>(r)]->tail, nullptr) << what;
    }

    const PageBundle leg = Leg(prompt, c.page);
    EXPECT_EQ(dr.tail->tokens, leg.tail->tokens) << what;
    EXPECT_EQ(dr.tail->prompt_len, leg.tail->prompt_len) << what;
    EXPECT_TRUE(dr.tail->state == leg.tail->state) << what << ": the sequence state differs";
    Rank& decoder = ranks[static_cast<size_t>(c.decoder)];
    const std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
    auto pages = decoder.engine->ExportPromptPages(head, kPrint);
    ASSERT_TRUE(pages.ok());
    ASSERT_EQ(pages->blocks.size(), leg.blocks.size()) << what;
    auto layout = model::MakeKvPageLayout(decoder.model->config(), decoder.model->layers(), c.page);
    ASSERT_TRUE(layout.ok());
    int64_t content_offset = layout->page_bytes;
    for (const auto& l : layout->layers) {
      for (const int64_t o : {l.kv_offset, l.key_offset, l.tail_offset}) {
        if (o >= 0) content_offset = std::min(content_offset, o);
      }
    }
    for (size_t i = 0; i < leg.blocks.size(); ++i) {
      EXPECT_TRUE(pages->blocks[i].key == leg.blocks[i].key) << what << ", page " << i;
      // The header's padding (after its `complete` flag) is never written: an engine pool's
      // page keeps what it held.
      const size_t from = static_cast<size_t>(content_offset);
      EXPECT_EQ(pages->blocks[i].bytes.substr(0, 4), leg.blocks[i].bytes.substr(0, 4)) << what;
      EXPECT_TRUE(pages->blocks[i].bytes.substr(from) == leg.blocks[i].bytes.substr(from))
          << what << ", page " << i;
    }

    Rank cold = Make(c.page);
    const Outputs colocated = Run(cold.engine.get(), prompt);
    const Outputs handed = Run(decoder.engine.get(), prompt);
    EXPECT_EQ(handed.prefix_hit, c.len - 1) << what;
    EXPECT_EQ(handed.ids, colocated.ids) << what;
    EXPECT_EQ(handed.logprob_bits, colocated.logprob_bits) << what;
    // DSpark: the same drafts as the leg's tail continued by a decode engine (a hand-off's
    // continuation; its verify-call count may differ from a cold run's, never its outputs).
    Rank pd = Make(c.page);
    ASSERT_TRUE(pd.engine->ImportPages(leg, kPrint).ok());
    const Outputs via_leg = Run(pd.engine.get(), prompt);
    EXPECT_EQ(via_leg.ids, colocated.ids) << what;
    EXPECT_EQ(decoder.engine->stats().spec.verified, pd.engine->stats().spec.verified) << what;
    EXPECT_EQ(decoder.engine->stats().spec.accepted, pd.engine->stats().spec.accepted) << what;
    EXPECT_TRUE(decoder.engine->CheckIntegrity().ok()) << what;
  }
}

DEEPINFER_BOTH_INDEX_KEY_MODES(ContextParallelPrefillTest);

}  // namespace
}  // namespace deepinfer::engine
