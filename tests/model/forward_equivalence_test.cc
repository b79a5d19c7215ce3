// Equivalences of the forward pass on the v41-tiny-a fixture (issue 3, item 7; issue 20): chunked
// prefill, verify rows, recompute in one call and batching give bit-identical logits to one-shot
// prefill / one-by-one decode / running alone, in both index-key modes. In official mode a row's
// index keys depend on whether it is a prompt row (index_key_schedule.h), so every comparison
// fixes the prompt length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "io/checkpoint.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

using test::kFixtureDir;

class ForwardEquivalenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(kFixtureDir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
    auto golden = io::Checkpoint::Open(kFixtureDir + "/golden.safetensors");
    ASSERT_TRUE(golden.ok());
    auto ids = golden->Get("input_ids");
    ASSERT_TRUE(ids.ok());
    for (int64_t v : ids->As<int64_t>()) ids_.push_back(static_cast<int32_t>(v));
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // Logits of every token of `ids` fed in chunks of the given sizes (cycled) to a fresh sequence
  // whose first `prompt_len` positions are its prompt (0: the first chunk).
  static std::vector<float> Chunked(const std::vector<int32_t>& ids, std::vector<int> sizes,
                                    IndexKeyMode mode, int64_t prompt_len = 0) {
    SequenceState s = model_->NewSequence();
    s.prompt_length = prompt_len;
    ForwardOptions opt;
    opt.index_key_mode = mode;
    opt.all_logits = true;
    std::vector<float> all;
    size_t pos = 0, i = 0;
    while (pos < ids.size()) {
      const size_t n = std::min<size_t>(sizes[i++ % sizes.size()], ids.size() - pos);
      ForwardInput in{&s, std::span<const int32_t>(ids).subspan(pos, n)};
      ForwardOutput out;
      Status st = model_->Forward(std::span(&in, 1), opt, &out);
      EXPECT_TRUE(st.ok()) << st.ToString();
      all.insert(all.end(), out.logits.begin(), out.logits.end());
      pos += n;
    }
    return all;
  }

  static double MeanRelRms(const std::vector<float>& a, const std::vector<float>& b, int64_t v) {
    double sum = 0;
    const int64_t rows = static_cast<int64_t>(a.size()) / v;
    for (int64_t r = 0; r < rows; ++r) {
      double num = 0, den = 0;
      for (int64_t i = 0; i < v; ++i) {
        const double d = a[r * v + i] - b[r * v + i];
        num += d * d;
        den += static_cast<double>(b[r * v + i]) * b[r * v + i];
      }
      sum += std::sqrt(num / den);
    }
    return sum / static_cast<double>(rows);
  }

  // Each sequence alone (prompt = its first chunk) against all of them in one call per step.
  static void ExpectBatchEqualsAlone(const std::vector<std::vector<int32_t>>& seqs,
                                     const std::vector<std::vector<int>>& plans,
                                     IndexKeyMode mode) {
    const size_t n_seq = seqs.size();
    std::vector<std::vector<float>> alone;
    for (size_t i = 0; i < n_seq; ++i) alone.push_back(Chunked(seqs[i], plans[i], mode));
    // Together: step t feeds each sequence its t-th chunk (sequences that finished sit out).
    std::vector<SequenceState> states;
    for (size_t i = 0; i < n_seq; ++i) states.push_back(model_->NewSequence());
    std::vector<std::vector<float>> together(n_seq);
    std::vector<size_t> pos(n_seq, 0);
    ForwardOptions opt;
    opt.index_key_mode = mode;
    opt.all_logits = true;
    for (size_t step = 0;; ++step) {
      std::vector<ForwardInput> inputs;
      std::vector<size_t> who;
      for (size_t i = 0; i < n_seq; ++i) {
        if (step >= plans[i].size()) continue;
        inputs.push_back(
            {&states[i], std::span<const int32_t>(seqs[i]).subspan(pos[i], plans[i][step])});
        who.push_back(i);
        pos[i] += plans[i][step];
      }
      if (inputs.empty()) break;
      ForwardOutput out;
      ASSERT_TRUE(model_->Forward(inputs, opt, &out).ok());
      const int64_t v = model_->config().vocab_size;
      size_t row = 0;
      for (size_t j = 0; j < inputs.size(); ++j) {
        const size_t n = inputs[j].tokens.size();
        together[who[j]].insert(together[who[j]].end(), out.logits.begin() + row * v,
                                out.logits.begin() + (row + n) * v);
        row += n;
      }
    }
    for (size_t i = 0; i < n_seq; ++i) {
      EXPECT_EQ(together[i], alone[i]) << "mode " << static_cast<int>(mode) << " sequence " << i;
    }
  }

  static Model* model_;
  static std::vector<int32_t> ids_;
};

Model* ForwardEquivalenceTest::model_ = nullptr;
std::vector<int32_t> ForwardEquivalenceTest::ids_;

TEST_F(ForwardEquivalenceTest, OwnerChunkedPrefillIsBitIdenticalToOneShot) {
  const auto one_shot = Chunked(ids_, {static_cast<int>(ids_.size())}, IndexKeyMode::kOwner);
  for (int chunk : {1, 3, 7, 16}) {
    EXPECT_EQ(Chunked(ids_, {chunk}, IndexKeyMode::kOwner), one_shot) << "chunk " << chunk;
  }
  // Mixed sizes, crossing compressor groups and the window at odd offsets.
  EXPECT_EQ(Chunked(ids_, {5, 1, 16, 2, 9}, IndexKeyMode::kOwner), one_shot);
}

TEST_F(ForwardEquivalenceTest, OfficialChunkedPrefillIsBitIdenticalToOneShot) {
  // Every prompt row has prefill semantics however the prompt is split, 1-row chunks included.
  const auto n = static_cast<int64_t>(ids_.size());
  const auto one_shot = Chunked(ids_, {static_cast<int>(n)}, IndexKeyMode::kOfficial);
  for (int chunk : {1, 3, 7, 16}) {
    EXPECT_EQ(Chunked(ids_, {chunk}, IndexKeyMode::kOfficial, n), one_shot) << "chunk " << chunk;
  }
  EXPECT_EQ(Chunked(ids_, {5, 1, 16, 2, 9}, IndexKeyMode::kOfficial, n), one_shot);
}

TEST_F(ForwardEquivalenceTest, OfficialDecodeRowsDifferFromPrefillRows) {
  // The fixture's ratio-2 index layer holds more than index_topk entries past position 17, so
  // official decode steps (scoring the ratio-1 owner's keys at odd steps) must differ from
  // prefill rows there; otherwise the official-mode tests below would prove nothing.
  ASSERT_GT(static_cast<int64_t>(ids_.size()), 4 * model_->config().index_topk);
  const int prompt = 47;
  std::vector<int> decode = {prompt};
  decode.resize(1 + ids_.size() - prompt, 1);
  const int64_t v = model_->config().vocab_size;
  const auto prefill = Chunked(ids_, {static_cast<int>(ids_.size())}, IndexKeyMode::kOfficial);
  const auto decoded = Chunked(ids_, decode, IndexKeyMode::kOfficial);
  EXPECT_TRUE(std::equal(prefill.begin(), prefill.begin() + prompt * v, decoded.begin()));
  EXPECT_NE(prefill, decoded);
  // Owner mode has no such difference.
  EXPECT_EQ(Chunked(ids_, decode, IndexKeyMode::kOwner),
            Chunked(ids_, {static_cast<int>(ids_.size())}, IndexKeyMode::kOwner));
}

TEST_F(ForwardEquivalenceTest, OwnerPrefillThenDecodeEqualsFullPrefill) {
  const int prompt = 47;
  std::vector<int> sizes = {prompt};
  sizes.resize(1 + ids_.size() - prompt, 1);
  EXPECT_EQ(Chunked(ids_, sizes, IndexKeyMode::kOwner),
            Chunked(ids_, {static_cast<int>(ids_.size())}, IndexKeyMode::kOwner));
}

TEST_F(ForwardEquivalenceTest, VerifyRowsEqualOneByOneDecode) {
  // Prompt, then blocks of k verify rows vs the same tokens decoded one at a time.
  for (IndexKeyMode mode : {IndexKeyMode::kOwner, IndexKeyMode::kOfficial}) {
    for (int prompt : {5, 18, 47}) {
      std::vector<int> single = {prompt};
      single.resize(1 + ids_.size() - prompt, 1);
      const auto one_by_one = Chunked(ids_, single, mode, prompt);
      for (int k : {2, 3, 4, 5}) {
        std::vector<int> verify = {prompt};
        for (size_t n = prompt; n < ids_.size(); n += k) verify.push_back(k);
        EXPECT_EQ(Chunked(ids_, verify, mode, prompt), one_by_one)
            << "mode " << static_cast<int>(mode) << " prompt " << prompt << " k " << k;
      }
    }
  }
}

TEST_F(ForwardEquivalenceTest, RecomputeEqualsPrefillThenDecode) {
  // After a preemption the engine feeds prompt and output again, in chunks that cross the prompt
  // boundary: the output rows keep one decode step's semantics (in official mode the model runs
  // rows that read keys of later rows' layers in further passes).
  for (IndexKeyMode mode : {IndexKeyMode::kOwner, IndexKeyMode::kOfficial}) {
    for (int prompt : {1, 2, 9, 47}) {
      std::vector<int> single = {prompt};
      single.resize(1 + ids_.size() - prompt, 1);
      const auto decoded = Chunked(ids_, single, mode, prompt);
      for (int chunk : {static_cast<int>(ids_.size()), 64, 13}) {
        EXPECT_EQ(Chunked(ids_, {chunk}, mode, prompt), decoded)
            << "mode " << static_cast<int>(mode) << " prompt " << prompt << " chunk " << chunk;
      }
    }
  }
}

TEST_F(ForwardEquivalenceTest, BatchOfFourGivesEachSequenceItsOwnLogits) {
  // Four different sequences (rotations and a reversal of the fixture input), mixed kinds in one
  // call: a prefill chunk, a decode row and verify rows.
  std::vector<std::vector<int32_t>> seqs;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> s = ids_;
    std::rotate(s.begin(), s.begin() + 11 * i, s.end());
    if (i == 3) std::reverse(s.begin(), s.end());
    s.resize(40);
    seqs.push_back(s);
  }
  const std::vector<std::vector<int>> plans = {{40}, {10, 1, 1, 28}, {3, 3, 34}, {20, 4, 16}};
  for (IndexKeyMode mode : {IndexKeyMode::kOwner, IndexKeyMode::kOfficial}) {
    ExpectBatchEqualsAlone(seqs, plans, mode);
  }
}

TEST_F(ForwardEquivalenceTest, MappedWeightsGiveThePackedResults) {
  // Computing from the mmap'd checkpoint layout (what a checkpoint larger than RAM uses) must give
  // the packed kernels' numbers bit for bit.
  LoadOptions lo;
  lo.residency = WeightResidency::kMapped;
  auto mapped = Model::Load(kFixtureDir, lo);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  ASSERT_FALSE((*mapped)->weights().layers[0].attn.wq_a.fp8.has_value());
  ASSERT_NE((*mapped)->weights().layers[0].attn.wq_a.codes, nullptr);
  ForwardOptions opt;
  opt.all_logits = true;
  std::vector<float> a, b;
  for (Model* m : {model_, mapped->get()}) {
    SequenceState s = m->NewSequence();
    ForwardInput in{&s, std::span<const int32_t>(ids_).first(30)};
    ForwardOutput out;
    ASSERT_TRUE(m->Forward(std::span(&in, 1), opt, &out).ok());
    ForwardInput step{&s, std::span<const int32_t>(ids_).subspan(30, 1)};
    ForwardOutput out2;
    ASSERT_TRUE(m->Forward(std::span(&step, 1), opt, &out2).ok());
    auto& dst = (m == model_) ? a : b;
    dst = out.logits;
    dst.insert(dst.end(), out2.logits.begin(), out2.logits.end());
  }
  EXPECT_EQ(a, b);
}

TEST_F(ForwardEquivalenceTest, RejectsBadInput) {
  SequenceState s = model_->NewSequence();
  std::vector<int32_t> bad = {0, model_->config().vocab_size};
  ForwardInput in{&s, bad};
  ForwardOutput out;
  Status st = model_->Forward(std::span(&in, 1), {}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("outside"), std::string::npos) << st.message();
  EXPECT_EQ(s.length, 0);  // nothing consumed
  ForwardInput twice[2] = {{&s, std::span<const int32_t>(ids_).first(2)},
                           {&s, std::span<const int32_t>(ids_).first(2)}};
  EXPECT_FALSE(model_->Forward(twice, {}, &out).ok());
}

}  // namespace
}  // namespace deepinfer::model
