// DSpark drafting over a draft vocabulary (model/deepseek_v41/draft_vocab.h) on the v41-tiny-a
// fixture: with the whole-vocabulary draft's ids in the subset, the drafts, confidences and the
// subset's logits are bit-identical to the whole-vocabulary draft; without them, each draft is
// the first maximum over the subset; bad vocabularies and files are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "fixture_util.h"
#include "model/deepseek_v41/draft_vocab.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

class DraftVocabTest : public testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::Load(test::TinyFixtureDir());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    ASSERT_TRUE(model_->config().dspark_enabled());
    state_ = model_->NewSequence();
    // Twelve positions of stage rings from random taps.
    const ModelConfig& c = model_->config();
    const int64_t rows = 12, width = static_cast<int64_t>(c.dspark_target_layer_ids.size()) * c.dim;
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint16_t> taps(static_cast<size_t>(rows * width));
    for (auto& v : taps) v = FloatToBf16(nd(rng));
    ASSERT_TRUE(model_->DSparkExtend(&state_, taps.data(), rows).ok());
  }

  // `n` distinct random ids, none of `exclude`, plus every id of `include`.
  std::vector<int32_t> RandomIds(int n, uint32_t seed, const std::set<int32_t>& exclude,
                                 const std::set<int32_t>& include = {}) const {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab() - 1));
    std::set<int32_t> ids(include);
    while (static_cast<int>(ids.size()) < n + static_cast<int>(include.size())) {
      const int32_t id = pick(rng);
      if (!exclude.count(id)) ids.insert(id);
    }
    std::vector<int32_t> v(ids.begin(), ids.end());
    std::shuffle(v.begin(), v.end(), rng);  // Build sorts them
    return v;
  }
  int64_t vocab() const { return model_->config().vocab_size; }

  std::unique_ptr<Model> model_;
  SequenceState state_;
};

TEST_F(DraftVocabTest, ContainingTheDraftsGivesTheWholeVocabularyDraft) {
  const int64_t block = model_->config().dspark_block_size;
  for (const int32_t token : {3, 17, 200}) {
    auto full = model_->DSparkDraft(state_, token);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    const std::set<int32_t> drafted(full->ids.begin() + 1, full->ids.end());
    auto dv = DraftVocabulary::Build(*model_, RandomIds(40, token, {}, drafted));
    ASSERT_TRUE(dv.ok()) << dv.status().ToString();
    ASSERT_TRUE(std::is_sorted(dv->ids().begin(), dv->ids().end()));
    auto sub = model_->DSparkDraft(state_, token, &*dv);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    EXPECT_EQ(sub->ids, full->ids) << "token " << token;
    ASSERT_EQ(sub->confidence.size(), full->confidence.size());
    for (size_t i = 0; i < full->confidence.size(); ++i) {
      EXPECT_EQ(Bits(sub->confidence[i]), Bits(full->confidence[i])) << i;
    }
    EXPECT_EQ(sub->hidden, full->hidden);
    ASSERT_EQ(static_cast<int64_t>(sub->logits.size()), block * dv->size());
    for (int64_t r = 0; r < block; ++r) {
      for (int64_t j = 0; j < dv->size(); ++j) {
        const int32_t id = dv->ids()[static_cast<size_t>(j)];
        ASSERT_EQ(Bits(sub->logits[r * dv->size() + j]), Bits(full->logits[r * vocab() + id]))
            << "row " << r << " id " << id;
      }
    }
  }
}

TEST_F(DraftVocabTest, EachDraftIsTheFirstMaximumOverTheSubset) {
  const int32_t token = 9;
  auto full = model_->DSparkDraft(state_, token);
  ASSERT_TRUE(full.ok());
  // Leave out the whole-vocabulary choice of the first position.
  auto dv = DraftVocabulary::Build(*model_, RandomIds(64, 77, {full->ids[1]}));
  ASSERT_TRUE(dv.ok());
  auto sub = model_->DSparkDraft(state_, token, &*dv);
  ASSERT_TRUE(sub.ok());
  // Row 0's logits (head + the Markov bias of `token`) are the whole draft's at those ids.
  int32_t want = -1;
  float best = 0.0f;
  for (const int32_t id : dv->ids()) {
    const float v = full->logits[id];
    if (want < 0 || v > best) want = id, best = v;
  }
  EXPECT_EQ(sub->ids[1], want);
  EXPECT_NE(sub->ids[1], full->ids[1]);
  const std::set<int32_t> allowed(dv->ids().begin(), dv->ids().end());
  for (size_t i = 1; i < sub->ids.size(); ++i) EXPECT_TRUE(allowed.count(sub->ids[i])) << i;
}

TEST_F(DraftVocabTest, BadVocabulariesAreClearErrors) {
  const auto expect_error = [&](std::vector<int32_t> ids, const std::string& what) {
    auto dv = DraftVocabulary::Build(*model_, std::move(ids));
    ASSERT_FALSE(dv.ok()) << what;
    EXPECT_NE(dv.status().message().find(what), std::string::npos) << dv.status().ToString();
  };
  expect_error({}, "empty");
  expect_error({1, static_cast<int32_t>(vocab())}, "outside");
  expect_error({-1}, "outside");
  expect_error({5, 2, 5}, "listed twice");
}

TEST_F(DraftVocabTest, FilesRoundTripAndBadFilesNameTheEntry) {
  const std::string dir = testing::TempDir() + "/draft_vocab_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + kDraftVocabFile;
  ASSERT_TRUE(WriteDraftVocabularyFile(path, std::vector<int32_t>{7, 3, 11}, "test").ok());
  auto ids = ReadDraftVocabularyFile(path, vocab());
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<int32_t>{3, 7, 11}));
  const auto read_text = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    return ReadDraftVocabularyFile(path, vocab());
  };
  auto plain = read_text("[4, 1, 2]");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(*plain, (std::vector<int32_t>{1, 2, 4}));
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"[1, \"a\"]", "entry 1 is not a token id"},
           {"[1, 2.5]", "entry 1 is not a token id"},
           {"[0, 99999999]", "entry 1 (99999999) is outside"},
           {"[3, 3]", "listed twice"},
           {"[]", "empty"},
           {"{\"source\": \"x\"}", "no \"ids\" array"},
           {"17", "an array of token ids"},
           {"[1, 2", "JSON parse error"}}) {
    auto r = read_text(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(what), std::string::npos)
        << text << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace deepinfer::model
