// Context parallelism (model/deepseek_v41/context_parallel.h) on the v41-tiny-a fixture, with
// the ranks as threads over an in-process exchange, each with its own loaded model: the last
// rank's sequence equals a one-shot single-process prefill bit for bit (logits, every compressed
// entry, index key and ring tail, rings, the pending partial groups) and decodes the same logits
// after it, for 2-4 ranks, prompts from one token to many pages, page lengths shorter and longer
// than the window, both index-key modes. A wrong or missing layer from a peer is an error, not
// output.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/thread_pool.h"
#include "fixture_util.h"
#include "model/deepseek_v41/context_parallel.h"
#include "model/deepseek_v41/model.h"
#include "thread_exchange.h"

namespace deepinfer::model {
namespace {

struct RankModel {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Model> model;
};

class ContextParallelTest : public testing::TestWithParam<IndexKeyMode> {
 protected:
  static void SetUpTestSuite() {
    for (int r = 0; r < 4; ++r) {
      RankModel m;
      m.pool = std::make_unique<ThreadPool>(1);
      LoadOptions lo;
      lo.pool = m.pool.get();
      auto loaded = Model::Load(test::TinyFixtureDir(), lo);
      ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
      m.model = std::move(loaded).value();
      models_->push_back(std::move(m));
    }
  }
  static void TearDownTestSuite() { models_->clear(); }
  static const Model& model(int r) { return *(*models_)[static_cast<size_t>(r)].model; }

  // A fresh sequence of `m` with pages of `page_tokens` positions in a store of its own.
  static SequenceState Fresh(const Model& m, int64_t page_tokens) {
    SequenceState s = m.NewSequence();
    auto layout = MakeKvPageLayout(m.config(), m.layers(), page_tokens);
    EXPECT_TRUE(layout.ok()) << layout.status().ToString();
    s.own_store = std::make_shared<KvPageStore>(*std::move(layout), 0, /*growable=*/true);
    s.kv_store = s.own_store.get();
    return s;
  }

  static std::vector<int32_t> Prompt(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(0, 511);
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (auto& t : p) t = id(rng);
    return p;
  }

  ForwardOptions Options() const {
    ForwardOptions o;
    o.index_key_mode = GetParam();
    return o;
  }

  // Runs the CP prefill on `ranks` thread-ranks; returns the last rank's state and output.
  // corrupt: a (rank, layer) whose message is sent one byte short (-1: none).
  Status RunRanks(int ranks, int per_rank, const std::vector<int32_t>& prompt, int64_t page_tokens,
                  SequenceState* last_state, ForwardOutput* last_out, int corrupt_rank = -1,
                  int corrupt_tag = -1, std::vector<int64_t>* received = nullptr) {
    Mailbox box;
    const std::vector<ContextChunk> chunks =
        PlanContextChunks(static_cast<int64_t>(prompt.size()), page_tokens, ranks, per_rank);
    std::vector<SequenceState> states;
    for (int r = 0; r < ranks; ++r) states.push_back(Fresh(model(r), page_tokens));
    std::vector<ForwardOutput> outs(static_cast<size_t>(ranks));
    std::vector<Status> status(static_cast<size_t>(ranks), Status::Ok());
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ThreadExchange ex(&box, r, ranks);
        if (r == corrupt_rank) ex.corrupt_tag_ = corrupt_tag;
        status[static_cast<size_t>(r)] =
            PrefillContextParallel(model(r), &states[static_cast<size_t>(r)], prompt, chunks, ex,
                                   Options(), 1, &outs[static_cast<size_t>(r)]);
      });
    }
    for (std::thread& t : threads) t.join();
    for (const Status& s : status) {
      if (!s.ok()) return s;
    }
    for (int r = 0; r + 1 < ranks; ++r) EXPECT_TRUE(outs[static_cast<size_t>(r)].logits.empty());
    if (received != nullptr) {
      for (int r = 0; r < ranks; ++r) received->push_back(box.received(r));
    }
    *last_state = std::move(states.back());
    *last_out = std::move(outs.back());
    return Status::Ok();
  }

  // The same content: every compressed entry, index key and ring tail of the positions
  // consumed, the rings, entry counts and partial groups, the tokens.
  void ExpectSameState(const Model& m, const SequenceState& a, const SequenceState& b,
                       const std::string& what) {
    ASSERT_EQ(a.length, b.length) << what;
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.prompt_length, b.prompt_length) << what;
    EXPECT_EQ(a.engram_history, b.engram_history) << what;
    const ModelConfig& c = m.config();
    for (size_t li = 0; li < a.layers.size(); ++li) {
      const LayerCache& x = a.layers[li];
      const LayerCache& y = b.layers[li];
      EXPECT_EQ(x.ring, y.ring) << what << " layer " << li;
      EXPECT_EQ(x.n_entries, y.n_entries) << what << " layer " << li;
      const LayerDescriptor& d = m.layers()[li];
      if (d.owns_compressor && d.compressor_pools) {
        // The slots of the pending partial group (the others are stale until overwritten).
        const auto n = static_cast<size_t>((a.length % d.compress_ratio) * c.head_dim);
        EXPECT_TRUE(std::equal(x.group_kv.begin(), x.group_kv.begin() + n, y.group_kv.begin()))
            << what << " layer " << li;
        EXPECT_TRUE(
            std::equal(x.group_score.begin(), x.group_score.begin() + n, y.group_score.begin()))
            << what << " layer " << li;
      }
      const int l = static_cast<int>(li);
      for (int64_t j = 0; d.owns_compressor && j < x.n_entries; ++j) {
        ASSERT_EQ(0, std::memcmp(a.CompressedEntry(l, j), b.CompressedEntry(l, j), c.head_dim * 2))
            << what << " layer " << li << " entry " << j;
        if (a.page_layout().layers[li].key_offset >= 0) {
          ASSERT_EQ(0, std::memcmp(a.IndexKey(l, j), b.IndexKey(l, j), c.index_head_dim * 2))
              << what << " layer " << li << " key " << j;
        }
      }
      for (int64_t pos = 0; pos < a.length; ++pos) {
        const uint16_t* ta = a.RingTail(l, -1, pos);
        const uint16_t* tb = b.RingTail(l, -1, pos);
        ASSERT_EQ(ta == nullptr, tb == nullptr);
        if (ta != nullptr) {
          ASSERT_EQ(0, std::memcmp(ta, tb, c.head_dim * 2))
              << what << " layer " << li << " tail of position " << pos;
        }
      }
    }
  }

  static std::vector<uint32_t> Bits(const std::vector<float>& v) {
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
  }

  // Greedy decode steps from `s` (the logits `first` of its last row): the logits of each.
  std::vector<std::vector<uint32_t>> Decode(const Model& m, SequenceState* s,
                                            std::vector<float> first, int steps) {
    std::vector<std::vector<uint32_t>> seen;
    for (int i = 0; i < steps; ++i) {
      const auto best =
          static_cast<int32_t>(std::max_element(first.begin(), first.end()) - first.begin());
      const std::vector<int32_t> tok = {best};
      const ForwardInput in{s, tok, true, 1, 0};
      ForwardOutput o;
      const Status st = m.Forward(std::span<const ForwardInput>(&in, 1), Options(), &o);
      EXPECT_TRUE(st.ok()) << st.ToString();
      seen.push_back(Bits(o.logits));
      first = o.logits;
    }
    return seen;
  }

  static std::unique_ptr<std::vector<RankModel>> models_;
};

std::unique_ptr<std::vector<RankModel>> ContextParallelTest::models_ =
    std::make_unique<std::vector<RankModel>>();

TEST(ContextChunks, PageBoundariesRoundRobinAndTheLastRankHoldsTheEnd) {
  EXPECT_EQ(PlanContextChunks(100, 8, 4).size(), 4u);
  EXPECT_EQ(PlanContextChunks(100, 8, 4, 3).size(), 12u);
  for (const int64_t n : {1, 7, 8, 9, 31, 32, 33, 100, 1000}) {
    for (const int ranks : {1, 2, 3, 4, 7}) {
      for (const int per_rank : {1, 3}) {
        const std::string what =
            std::to_string(n) + " " + std::to_string(ranks) + " " + std::to_string(per_rank);
        const auto chunks = PlanContextChunks(n, 8, ranks, per_rank);
        int64_t at = 0;
        int64_t smallest = n, largest = 0;
        for (size_t i = 0; i < chunks.size(); ++i) {
          EXPECT_EQ(chunks[i].begin, at) << what;
          if (i + 1 < chunks.size()) EXPECT_EQ(chunks[i].end % 8, 0) << what;
          // Round-robin, the last chunk on the last rank.
          EXPECT_EQ(chunks[i].rank, (ranks - 1 - static_cast<int>(chunks.size() - 1 - i) % ranks))
              << what;
          at = chunks[i].end;
          if (chunks[i].end > chunks[i].begin) {
            smallest = std::min(smallest, chunks[i].end - chunks[i].begin);
            largest = std::max(largest, chunks[i].end - chunks[i].begin);
          }
        }
        EXPECT_EQ(at, n);
        EXPECT_GT(chunks.back().end, chunks.back().begin) << what;
        EXPECT_EQ(chunks.back().rank, ranks - 1) << what;
        // Equal shares of pages: sizes differ by at most a page (and the last one's remainder).
        if (n >= 8 * ranks * per_rank) EXPECT_LE(largest - smallest, 16) << what;
      }
    }
  }
}

TEST_P(ContextParallelTest, LastRankEqualsOneProcessPrefillAndDecode) {
  const Model& ref_model = model(0);
  const int64_t min_page = MinPageTokens(ref_model.config(), ref_model.layers());
  // Page lengths below and above the window (16): several pages' tails fill a ring, or one.
  for (const int64_t page :
       {min_page * ((8 + min_page - 1) / min_page), min_page * ((32 + min_page - 1) / min_page)}) {
    for (const auto& [ranks, per_rank] :
         std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {4, 1}, {2, 3}, {3, 2}}) {
      for (const int64_t n :
           {int64_t{1}, int64_t{5}, page, page + 1, 3 * page + 5, 10 * page + 3}) {
        const std::string what = "page " + std::to_string(page) + " ranks " +
                                 std::to_string(ranks) + " x " + std::to_string(per_rank) +
                                 " prompt " + std::to_string(n);
        const std::vector<int32_t> prompt = Prompt(n, static_cast<uint32_t>(n * 7 + ranks));
        SequenceState ref = Fresh(ref_model, page);
        ForwardOutput ref_out;
        const ForwardInput in{&ref, prompt, true, 1, 0};
        ASSERT_TRUE(
            ref_model.Forward(std::span<const ForwardInput>(&in, 1), Options(), &ref_out).ok());
        SequenceState cp;
        ForwardOutput cp_out;
        const Status s = RunRanks(ranks, per_rank, prompt, page, &cp, &cp_out);
        ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
        EXPECT_EQ(Bits(cp_out.logits), Bits(ref_out.logits)) << what;
        ExpectSameState(model(ranks - 1), cp, ref, what);
        EXPECT_EQ(Decode(model(ranks - 1), &cp, cp_out.logits, 3),
                  Decode(ref_model, &ref, ref_out.logits, 3))
            << what;
      }
    }
  }
}

// The ring tails go to a rank only where it restores a ring from them: every page's to the last
// rank, the window before its own chunk to a middle one (fewer bytes, the same last state).
TEST_P(ContextParallelTest, AMiddleRankGetsOnlyItsHalo) {
  const int64_t page = MinPageTokens(model(0).config(), model(0).layers());
  const int64_t window = model(0).config().window_size;
  // Three chunks of several windows each: rank 1 needs rank 0's last window only.
  const int64_t pages_per_chunk = std::max<int64_t>(4, 4 * window / page);
  const std::vector<int32_t> prompt = Prompt(3 * pages_per_chunk * page, 9);
  SequenceState cp;
  ForwardOutput out;
  std::vector<int64_t> received;
  ASSERT_TRUE(RunRanks(3, 1, prompt, page, &cp, &out, -1, -1, &received).ok());
  // Rank 1 gets chunk 0 with the halo only; rank 2 gets chunks 0 and 1 with every tail.
  EXPECT_GT(received[1], 0);
  EXPECT_LT(received[1], received[2] / 2) << received[1] << " vs " << received[2];
  SequenceState alone = Fresh(model(0), page);
  const ForwardInput in{&alone, prompt, true, 1, 0};
  ForwardOutput ref;
  ASSERT_TRUE(model(0).Forward(std::span<const ForwardInput>(&in, 1), Options(), &ref).ok());
  ExpectSameState(model(0), cp, alone, "3 ranks, halos");
  EXPECT_EQ(out.logits, ref.logits);
}

TEST_P(ContextParallelTest, AShortMessageIsAnErrorNotOutput) {
  const int64_t min_page = MinPageTokens(model(0).config(), model(0).layers());
  const int64_t page = min_page * ((8 + min_page - 1) / min_page);
  const std::vector<int32_t> prompt = Prompt(4 * page, 3);
  SequenceState cp;
  ForwardOutput out;
  const Status s = RunRanks(2, 1, prompt, page, &cp, &out, /*corrupt_rank=*/0, /*corrupt_tag=*/2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0 sent"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("layer 2"), std::string::npos) << s.ToString();
}

TEST_P(ContextParallelTest, BadChunksAreRefused) {
  SequenceState s = Fresh(model(0), 16);
  Mailbox box;
  ThreadExchange ex(&box, 0, 2);
  ForwardOutput out;
  const std::vector<int32_t> prompt = Prompt(40, 1);
  const auto refused = [&](const std::vector<ContextChunk>& chunks) {
    return !PrefillContextParallel(model(0), &s, prompt, chunks, ex, Options(), 1, &out).ok();
  };
  EXPECT_TRUE(refused({{0, 10, 0}, {10, 40, 1}}));  // off a page boundary
  EXPECT_TRUE(refused({{0, 16, 0}, {32, 40, 1}}));  // a gap
  EXPECT_TRUE(refused({{0, 16, 1}, {16, 40, 0}}));  // the end not on the last rank
  EXPECT_TRUE(refused({{0, 16, 0}, {16, 40, 2}}));  // no rank 2
  EXPECT_TRUE(refused({{0, 16, 0}, {16, 32, 1}}));  // short of the prompt
  EXPECT_TRUE(refused({}));
}

INSTANTIATE_TEST_SUITE_P(Modes, ContextParallelTest,
                         testing::Values(IndexKeyMode::kOfficial, IndexKeyMode::kOwner),
                         [](const testing::TestParamInfo<IndexKeyMode>& i) {
                           return i.param == IndexKeyMode::kOfficial ? "Official" : "Owner";
                         });

}  // namespace
}  // namespace deepinfer::model
