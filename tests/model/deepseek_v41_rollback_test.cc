// Rollback of speculative rows (rollback.h) on the v41-tiny-a fixture, owner index-key mode
// (where a call's results do not depend on its chunking): a prompt, then a verify call of
// `keep` real rows followed by junk rows, rolled back to the kept rows, then the rest of the
// real tokens must give the logits of a run that fed only the real tokens (same calls without
// the junk), bit for bit, and every live part of the sequence state must be identical.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "model/deepseek_v41/model.h"
#include "model/deepseek_v41/rollback.h"

namespace deepinfer::model {
namespace {

using test::SameBits;

using test::kFixtureDir;

class RollbackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(kFixtureDir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static std::vector<float> Run(SequenceState* s, std::span<const int32_t> tokens,
                                bool all_logits = true) {
    ForwardOptions opt;
    opt.index_key_mode = mode_;
    opt.all_logits = all_logits;
    ForwardInput in{s, tokens};
    ForwardOutput out;
    const Status st = model_->Forward(std::span(&in, 1), opt, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out.logits;
  }

  // Every value of `a` and `b` that a later call can read, compared bitwise.
  static void ExpectSameState(const SequenceState& a, const SequenceState& b,
                              const std::string& where) {
    SCOPED_TRACE(where);
    ASSERT_EQ(a.length, b.length);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.prompt_length, b.prompt_length);
    EXPECT_TRUE(a.engram_history == b.engram_history);
    EXPECT_EQ(a.dspark_length, b.dspark_length);
    EXPECT_EQ(a.dspark, b.dspark);
    const KvPageLayout& l = a.page_layout();
    for (size_t li = 0; li < a.layers.size(); ++li) {
      const LayerCache &ca = a.layers[li], &cb = b.layers[li];
      EXPECT_EQ(ca.ring, cb.ring) << "layer " << li;
      EXPECT_EQ(ca.n_entries, cb.n_entries) << "layer " << li;
      EXPECT_TRUE(SameBits(ca.group_kv, cb.group_kv)) << "layer " << li;
      EXPECT_TRUE(SameBits(ca.group_score, cb.group_score)) << "layer " << li;
      const KvPageLayout::Layer& pl = l.layers[li];
      for (int64_t j = 0; pl.kv_offset >= 0 && j < ca.n_entries; ++j) {
        EXPECT_EQ(0, std::memcmp(a.CompressedEntry(static_cast<int>(li), j),
                                 b.CompressedEntry(static_cast<int>(li), j), l.head_dim * 2))
            << "layer " << li << " entry " << j;
        if (pl.key_offset >= 0) {
          EXPECT_EQ(0, std::memcmp(a.IndexKey(static_cast<int>(li), j),
                                   b.IndexKey(static_cast<int>(li), j), l.index_head_dim * 2))
              << "layer " << li << " key " << j;
        }
      }
      for (int64_t pos = 0; pos < a.length; ++pos) {
        const uint16_t* ta = a.RingTail(static_cast<int>(li), -1, pos);
        const uint16_t* tb = b.RingTail(static_cast<int>(li), -1, pos);
        ASSERT_EQ(ta == nullptr, tb == nullptr);
        if (ta) EXPECT_EQ(0, std::memcmp(ta, tb, l.head_dim * 2)) << "tail " << pos;
      }
    }
    const size_t pages = std::min(a.pages.size(), b.pages.size());
    for (size_t p = 0; p < pages; ++p) {
      const KvPageHeader* ha = a.kv_store->header(a.pages[p]);
      const KvPageHeader* hb = b.kv_store->header(b.pages[p]);
      EXPECT_EQ(ha->complete, hb->complete) << "page " << p;
    }
  }

  static Model* model_;
  static IndexKeyMode mode_;  // of every Run
};

Model* RollbackTest::model_ = nullptr;
IndexKeyMode RollbackTest::mode_ = IndexKeyMode::kOwner;

TEST_F(RollbackTest, RejectedRowsLeaveNoTrace) {
  std::mt19937_64 rng(17);
  const int vocab = model_->config().vocab_size;
  auto random_tokens = [&](int n) {
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = static_cast<int32_t>(3 + rng() % (vocab - 3));
    return v;
  };
  int cases = 0;
  // Prompt lengths cover both residues of the ratio-2 groups, every residue of the 4-position
  // candidate blocks and the end of the first 64-position page; the verify calls hold up to 8
  // rows (window 16), so rejected rows overwrite kept rows' partial-group slots.
  // Both index-key modes: in official mode the verify rows are decode steps.
  for (const IndexKeyMode mode : {IndexKeyMode::kOwner, IndexKeyMode::kOfficial}) {
    mode_ = mode;
    for (const int prompt_len : {1, 2, 5, 14, 15, 62, 63}) {
      for (const int rows : {2, 4, 8}) {
        for (int keep = 0; keep <= rows; keep += (rows > 4 ? 3 : rows > 2 ? 2 : 1)) {
          const std::vector<int32_t> prompt = random_tokens(prompt_len);
          const std::vector<int32_t> real = random_tokens(keep + 5);
          std::vector<int32_t> verify(real.begin(), real.begin() + keep);
          for (int32_t t : random_tokens(rows - keep)) verify.push_back(t);
          const std::span<const int32_t> kept(real.data(), keep);
          const std::span<const int32_t> rest(real.data() + keep, 5);

          SequenceState ref = model_->NewSequence();
          Run(&ref, prompt, false);
          std::vector<float> ref_kept;
          if (keep > 0) ref_kept = Run(&ref, kept);
          const std::vector<float> ref_rest = Run(&ref, rest);

          SequenceState s = model_->NewSequence();
          Run(&s, prompt, false);
          SpeculationCheckpoint cp;
          ASSERT_TRUE(BeginSpeculation(&s, rows, &cp).ok());
          const std::vector<float> spec = Run(&s, verify);
          ASSERT_TRUE(RollbackSpeculation(*model_, &s, &cp, prompt_len + keep).ok());
          EXPECT_EQ(s.group_undo, nullptr);
          // The kept rows' logits are those of the run without junk (later rows cannot affect
          // earlier ones: causal attention, per-row kernels).
          ASSERT_EQ(spec.size(), static_cast<size_t>(rows * vocab));
          EXPECT_TRUE(SameBits(std::span(spec).first(ref_kept.size()), ref_kept));
          const std::vector<float> after = Run(&s, rest);
          const std::string where = "mode " + std::to_string(static_cast<int>(mode)) + " prompt " +
                                    std::to_string(prompt_len) + " rows " + std::to_string(rows) +
                                    " keep " + std::to_string(keep);
          ASSERT_EQ(after.size(), ref_rest.size()) << where;
          EXPECT_TRUE(SameBits(after, ref_rest)) << where;
          ExpectSameState(ref, s, where);
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 80);
}

TEST_F(RollbackTest, RejectsMisuse) {
  SequenceState s = model_->NewSequence();
  const std::vector<int32_t> prompt = {5, 6, 7};
  Run(&s, prompt, false);
  SpeculationCheckpoint cp;
  EXPECT_FALSE(BeginSpeculation(&s, 0, &cp).ok());
  EXPECT_FALSE(BeginSpeculation(&s, model_->config().window_size + 1, &cp).ok());
  EXPECT_FALSE(RollbackSpeculation(*model_, &s, &cp, 3).ok());  // nothing open
  ASSERT_TRUE(BeginSpeculation(&s, 2, &cp).ok());
  EXPECT_FALSE(BeginSpeculation(&s, 2, &cp).ok());  // already open
  const std::vector<int32_t> verify = {8, 9};
  Run(&s, verify, false);
  EXPECT_FALSE(RollbackSpeculation(*model_, &s, &cp, 6).ok());  // beyond the call
  ASSERT_TRUE(RollbackSpeculation(*model_, &s, &cp, 4).ok());
  EXPECT_EQ(s.length, 4);
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{5, 6, 7, 8}));
}

}  // namespace
}  // namespace deepinfer::model
