// Decoder-side bounded replay on the v41-tiny-a fixture (window 16; KV sources 1 and 3, so
// layers 4 and 5 run only on the kept rows): what must stay exact stays exact (the KV sources'
// compressed entries and index keys, short prompts, chunked = one-shot), what is approximate is
// measured, and requests it cannot serve are refused before anything changes.
#include "model/deepseek_v41/decoder_replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

using test::SameBits;

class DecoderReplayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(test::TinyFixtureDir());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static std::vector<int32_t> Prompt(int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(n);
    for (int32_t& t : p) t = static_cast<int32_t>(3 + rng() % (model_->config().vocab_size - 3));
    return p;
  }

  // Prefill `prompt` in chunks of `chunk` (the last wants logits), then `decode` greedy steps;
  // returns the logits of every call that produced some, concatenated.
  static std::vector<float> Run(SequenceState* s, const std::vector<int32_t>& prompt, int chunk,
                                int64_t keep, int decode) {
    ForwardOptions opt;
    opt.index_key_mode = IndexKeyMode::kOwner;
    opt.decoder_replay_keep = keep;
    std::vector<float> all;
    const int64_t n = static_cast<int64_t>(prompt.size());
    for (int64_t at = 0; at < n; at += chunk) {
      const int64_t len = std::min<int64_t>(chunk, n - at);
      ForwardInput in{s, std::span<const int32_t>(prompt).subspan(at, len)};
      in.want_logits = at + len == n;
      in.prefill_end = n;
      ForwardOutput out;
      const Status st = model_->Forward(std::span(&in, 1), opt, &out);
      EXPECT_TRUE(st.ok()) << st.ToString();
      all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    for (int i = 0; i < decode; ++i) {
      const auto last = all.end() - model_->config().vocab_size;
      const int32_t next = static_cast<int32_t>(std::max_element(last, all.end()) - last);
      ForwardInput in{s, std::span<const int32_t>(&next, 1)};
      ForwardOutput out;
      EXPECT_TRUE(model_->Forward(std::span(&in, 1), opt, &out).ok());
      all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    return all;
  }

  static Model* model_;
};

Model* DecoderReplayTest::model_ = nullptr;

TEST_F(DecoderReplayTest, LastKvSourceOfTheFixtureIsLayerThree) {
  EXPECT_EQ(LastKvSourceLayer(model_->layers(), model_->config().n_layers), 3);
}

TEST_F(DecoderReplayTest, APromptNoLongerThanTheKeptRowsIsExact) {
  const auto prompt = Prompt(28, 1);
  SequenceState a = model_->NewSequence(), b = model_->NewSequence();
  EXPECT_TRUE(SameBits(Run(&a, prompt, 28, 0, 6), Run(&b, prompt, 28, 28, 6)));
}

TEST_F(DecoderReplayTest, KvSourcesStayExactAndChunkedEqualsOneShot) {
  const auto prompt = Prompt(120, 2);
  const int64_t keep = 28;  // window 16 + 12
  SequenceState full = model_->NewSequence(), one = model_->NewSequence(),
                one_decoded = model_->NewSequence(), chunked = model_->NewSequence();
  const auto lf = Run(&full, prompt, 120, 0, 0);
  const auto l1 = Run(&one, prompt, 120, keep, 0);
  // Chunk boundaries do not change what the replay computes, prefill and decode alike.
  EXPECT_TRUE(
      SameBits(Run(&one_decoded, prompt, 120, keep, 10), Run(&chunked, prompt, 37, keep, 10)));
  // Layers up to the last KV source ran on every row: their entries, keys and rings are exact.
  for (int li : {1, 3}) {
    ASSERT_EQ(one.layers[li].n_entries, full.layers[li].n_entries);
    for (int64_t j = 0; j < full.layers[li].n_entries; ++j) {
      EXPECT_EQ(std::memcmp(one.CompressedEntry(li, j), full.CompressedEntry(li, j),
                            model_->config().head_dim * 2),
                0)
          << "layer " << li << " entry " << j;
      EXPECT_EQ(std::memcmp(one.IndexKey(li, j), full.IndexKey(li, j),
                            model_->config().index_head_dim * 2),
                0);
    }
  }
  for (int li = 0; li <= 3; ++li) EXPECT_EQ(one.layers[li].ring, full.layers[li].ring);
  // The later layers start their windows at the first kept row.
  EXPECT_EQ(one.layers[4].ring_from, 120 - keep);
  EXPECT_EQ(one.layers[5].ring_from, 120 - keep);
  EXPECT_EQ(one.layers[3].ring_from, 0);
  // The approximation: the last row's logits move, but stay finite; measured
  // (docs/engine_contract.md).
  const int64_t v = model_->config().vocab_size;
  double max_diff = 0, max_abs = 0;
  for (int64_t i = 0; i < v; ++i) {
    ASSERT_TRUE(std::isfinite(l1[i]));
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(l1[i] - lf[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(lf[i])));
  }
  EXPECT_GT(max_diff, 0.0);  // rows were really skipped
  std::printf("decoder replay keep %lld of 120: max |dlogit| %.4g of max |logit| %.4g\n",
              static_cast<long long>(keep), max_diff, max_abs);
}

TEST_F(DecoderReplayTest, LogitsOfSkippedRowsAreRefusedBeforeAnythingRuns) {
  const auto prompt = Prompt(60, 3);
  SequenceState s = model_->NewSequence();
  ForwardOptions opt;
  opt.decoder_replay_keep = 20;
  ForwardInput in{&s, prompt};
  in.prefill_end = 60;
  in.logits_rows = 30;  // rows 30..59, but only 40..59 are kept
  ForwardOutput out;
  EXPECT_FALSE(model_->Forward(std::span(&in, 1), opt, &out).ok());
  opt.all_logits = true;
  in.logits_rows = 1;
  EXPECT_FALSE(model_->Forward(std::span(&in, 1), opt, &out).ok());
  EXPECT_EQ(s.length, 0);  // nothing consumed
  opt.all_logits = false;
  EXPECT_TRUE(model_->Forward(std::span(&in, 1), opt, &out).ok());
  EXPECT_EQ(s.length, 60);
}

}  // namespace
}  // namespace deepinfer::model
