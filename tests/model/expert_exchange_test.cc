// Expert parallelism inside one process (expert_exchange.h, routed_experts.h): a model that holds
// only some routed experts, with an exchange that runs every (row, expert) pair on whichever of
// two half models holds that expert, in shuffled order and in separate calls, gives the same
// logit and draft bits as the whole model. This is the property N MPI ranks rely on
// (tests/dist/mpi_generate_test.sh checks the ranks themselves).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "fixture_util.h"
#include "model/deepseek_v41/model.h"
#include "model/deepseek_v41/routed_experts.h"

namespace deepinfer::model {
namespace {

using test::kFixtureDir;

std::unique_ptr<Model> LoadHolding(int parity) {
  LoadOptions o;
  if (parity >= 0) o.hold_expert = [parity](int, int64_t e) { return e % 2 == parity; };
  auto m = Model::Load(kFixtureDir, o);
  CHECK(m.ok()) << m.status().ToString();
  return std::move(*m);
}

// Runs each pair on the half model that holds its expert: pairs shuffled, and the two halves'
// pairs in separate RunExpertPairs calls of varying sizes.
class SplitExchange : public ExpertExchange {
 public:
  SplitExchange(const Model* even, const Model* odd) : halves_{even, odd} {}
  void RunRouted(int layer, const uint16_t* act, int64_t n_act, std::span<const ExpertPair> pairs,
                 uint16_t* y) override {
    (void)n_act;
    ++calls;
    const int64_t dim = halves_[0]->config().dim;
    std::vector<size_t> order(pairs.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    size_t at = 0;
    while (at < order.size()) {
      const size_t n = std::min<size_t>(1 + rng_() % 3, order.size() - at);
      for (int half = 0; half < 2; ++half) {
        std::vector<ExpertPair> mine;
        std::vector<size_t> where;
        for (size_t i = at; i < at + n; ++i) {
          if (pairs[order[i]].expert % 2 == half) {
            mine.push_back(pairs[order[i]]);
            where.push_back(order[i]);
          }
        }
        std::vector<uint16_t> out(mine.size() * static_cast<size_t>(dim));
        const Model& m = *halves_[half];
        RunExpertPairs(m.config(), m.weights().layers[static_cast<size_t>(layer)].moe, m.pool(),
                       act, mine, out.data());
        for (size_t k = 0; k < where.size(); ++k) {
          std::copy_n(out.data() + k * static_cast<size_t>(dim), dim,
                      y + where[k] * static_cast<size_t>(dim));
        }
      }
      at += n;
    }
  }
  int calls = 0;

 private:
  const Model* halves_[2];
  std::mt19937 rng_{11};
};

std::vector<float> PrefillThenDecode(const Model& m, const std::vector<int32_t>& prompt,
                                     const std::vector<int32_t>& decode) {
  SequenceState s = m.NewSequence();
  s.prompt_length = static_cast<int64_t>(prompt.size());
  ForwardOptions opt;
  opt.all_logits = true;
  std::vector<float> all;
  ForwardInput in{&s, prompt};
  ForwardOutput out;
  EXPECT_TRUE(m.Forward(std::span(&in, 1), opt, &out).ok());
  all = out.logits;
  for (const int32_t t : decode) {
    ForwardInput d{&s, std::span<const int32_t>(&t, 1)};
    ForwardOutput o;
    EXPECT_TRUE(m.Forward(std::span(&d, 1), opt, &o).ok());
    all.insert(all.end(), o.logits.begin(), o.logits.end());
  }
  return all;
}

TEST(ExpertExchange, HalfModelsThroughAnExchangeGiveTheWholeModelsBits) {
  const std::unique_ptr<Model> whole = LoadHolding(-1);
  const std::unique_ptr<Model> even = LoadHolding(0);
  const std::unique_ptr<Model> odd = LoadHolding(1);
  const auto& experts = even->weights().layers[0].moe.experts;
  ASSERT_GE(experts.size(), 2u);
  EXPECT_TRUE(experts[0].held());
  EXPECT_FALSE(experts[1].held()) << "an odd expert was loaded by the even half";

  SplitExchange exchange(even.get(), odd.get());
  even->set_expert_exchange(&exchange);
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  const std::vector<int32_t> decode = {40, 41, 42};
  const std::vector<float> a = PrefillThenDecode(*whole, prompt, decode);
  const std::vector<float> b = PrefillThenDecode(*even, prompt, decode);
  EXPECT_GT(exchange.calls, 0);
  EXPECT_TRUE(test::SameBits(a, b));
}

TEST(ExpertExchange, HoldExpertsLoadsAndDropsAndChecksItsInput) {
  const std::unique_ptr<Model> whole = LoadHolding(-1);
  std::unique_ptr<Model> even = LoadHolding(0);
  const size_t n = even->weights().layers[0].moe.experts.size();
  const std::vector<uint8_t> all(n, 1);
  for (int l = 0; l < static_cast<int>(even->layers().size()); ++l) {
    ASSERT_TRUE(even->HoldExperts(l, all).ok());
  }
  EXPECT_TRUE(even->weights().layers[0].moe.experts[1].held());
  const std::vector<int32_t> prompt = {3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(
      test::SameBits(PrefillThenDecode(*whole, prompt, {9}), PrefillThenDecode(*even, prompt, {9})))
      << "experts loaded later differ from experts loaded at start";
  std::vector<uint8_t> one(n, 0);
  one[1] = 1;
  ASSERT_TRUE(even->HoldExperts(0, one).ok());
  EXPECT_FALSE(even->weights().layers[0].moe.experts[0].held());
  EXPECT_TRUE(even->weights().layers[0].moe.experts[1].held());
  EXPECT_FALSE(even->HoldExperts(0, std::vector<uint8_t>(n + 1, 1)).ok());
  EXPECT_FALSE(even->HoldExperts(99, all).ok());
}

}  // namespace
}  // namespace deepinfer::model
