// Parallel samples (n > 1, forked from the first sample's prompt state, sharing its full pages)
// and prompt logprobs through the engine, on the fake runner (fast, page use checked) and on the
// fixture model (bitwise against separate requests and a direct forward pass).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "fake_runner.h"
#include "fixture_model.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::engine {
namespace {

using testing::FakeRunner;

// Output of one sample: ids and the bit patterns of their logprobs.
struct SampleOut {
  std::vector<int32_t> ids;
  std::vector<uint32_t> logprob_bits;
  std::vector<SampleResult> prompt_logprobs;
  std::optional<FinishReason> finish;
  int deliveries = 0;
};

// Records every delivery under its (request, sample index).
struct Recorder {
  std::map<std::pair<int, int64_t>, SampleOut> out;
  std::function<void(const RequestOutput&)> For(int request) {
    return [this, request](const RequestOutput& o) {
      SampleOut& s = out[{request, o.sample_index}];
      EXPECT_FALSE(s.finish) << "a delivery after the finish";
      ++s.deliveries;
      s.ids.insert(s.ids.end(), o.new_tokens.begin(), o.new_tokens.end());
      for (const SampleResult& r : o.samples)
        s.logprob_bits.push_back(std::bit_cast<uint32_t>(r.logprob));
      if (!o.prompt_logprobs.empty()) s.prompt_logprobs = o.prompt_logprobs;
      if (o.finished) s.finish = o.finished;
      EXPECT_TRUE(o.error.ok()) << o.error.ToString();
    };
  }
};

struct Spec {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

std::vector<Spec> RandomSpecs(int n, uint64_t seed, int vocab) {
  std::mt19937_64 rng(seed);
  std::vector<Spec> specs(n);
  for (int i = 0; i < n; ++i) {
    Spec& s = specs[i];
    const int len = 1 + static_cast<int>(rng() % 30);
    for (int k = 0; k < len; ++k) s.prompt.push_back(static_cast<int32_t>(2 + rng() % (vocab - 2)));
    s.params.n = 1 + static_cast<int32_t>(rng() % 4);
    s.params.max_tokens = 1 + static_cast<int64_t>(rng() % 12);
    s.params.temperature = i % 4 == 0 ? 0.0f : 1.0f;
    s.params.seed = 500 + static_cast<uint64_t>(i);
    s.params.ignore_eos = i % 2 == 0;
    s.params.logprobs = true;
  }
  return specs;
}

EngineOptions FakeOptions(int64_t pages, int64_t max_running, int64_t chunk, bool prefix_cache) {
  EngineOptions o;
  o.kv_budget_bytes = pages * 4 * 8 + 64 * max_running;  // FakeRunner: 4 positions per page
  o.scheduler.max_running = max_running;
  o.scheduler.prefill_chunk = chunk;
  o.scheduler.max_batch_tokens = 64;
  o.prefix_cache = prefix_cache;
  o.check_integrity = true;  // shared pages' ref counts are checked after every step
  return o;
}

// Runs specs through one engine on `runner`; `separate` runs each sample as its own request
// (n = 1, sample_index i) instead.
Recorder RunFake(FakeRunner* runner, const std::vector<Spec>& specs, EngineOptions options,
                 bool separate, EngineStats* stats = nullptr) {
  auto engine = Engine::Create(runner, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  Recorder rec;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int copies = separate ? specs[i].params.n : 1;
    for (int k = 0; k < copies; ++k) {
      Request r;
      r.prompt = specs[i].prompt;
      r.params = specs[i].params;
      if (separate) {
        r.params.n = 1;
        r.sample_index = k;
      }
      r.on_output = rec.For(static_cast<int>(i));
      const auto id = (*engine)->Add(std::move(r));
      EXPECT_TRUE(id.ok()) << id.status().ToString();
    }
  }
  EXPECT_TRUE((*engine)->RunUntilIdle().ok());
  EXPECT_EQ((*engine)->kv().counters().used, 0);
  if (stats) *stats = (*engine)->stats();
  return rec;
}

int64_t TotalSamples(const std::vector<Spec>& specs) {
  int64_t n = 0;
  for (const Spec& s : specs) n += s.params.n;
  return n;
}

TEST(EngineSamplesTest, ForkedSamplesEqualSeparateRequestsAndComputeThePromptOnce) {
  const auto specs = RandomSpecs(40, 7, 64);
  FakeRunner a(64, 4), b(64, 4);
  EngineStats forked, separate;
  const Recorder x = RunFake(&a, specs, FakeOptions(400, 16, 8, false), false, &forked);
  const Recorder y = RunFake(&b, specs, FakeOptions(400, 16, 8, false), true, &separate);
  ASSERT_EQ(static_cast<int64_t>(x.out.size()), TotalSamples(specs));
  for (const auto& [key, s] : y.out) {
    const auto it = x.out.find(key);
    ASSERT_NE(it, x.out.end()) << "request " << key.first << " sample " << key.second;
    EXPECT_EQ(it->second.ids, s.ids) << "request " << key.first << " sample " << key.second;
    EXPECT_EQ(it->second.logprob_bits, s.logprob_bits);
    EXPECT_EQ(it->second.finish, s.finish);
  }
  // Without a prefix cache, separate requests compute every prompt n times, forks once.
  int64_t saved = 0;
  for (const Spec& s : specs) saved += (s.params.n - 1) * static_cast<int64_t>(s.prompt.size());
  EXPECT_EQ(separate.tokens_computed - forked.tokens_computed, saved);
  EXPECT_EQ(separate.tokens_generated, forked.tokens_generated);
}

TEST(EngineSamplesTest, WithoutForkSupportOrRunningSlotsSamplesComputeTheirOwnPrompt) {
  const auto specs = RandomSpecs(24, 11, 64);
  FakeRunner ref_runner(64, 4);
  const Recorder ref = RunFake(&ref_runner, specs, FakeOptions(400, 16, 8, true), true);
  FakeRunner no_fork(64, 4);
  no_fork.set_fork_support(false);
  const Recorder x = RunFake(&no_fork, specs, FakeOptions(400, 16, 8, true), false);
  FakeRunner one_slot(64, 4);
  const Recorder y = RunFake(&one_slot, specs, FakeOptions(400, 1, 8, true), false);
  FakeRunner tiny(64, 4);  // forks fail to get a page for the partial prompt page, or preempt
  const Recorder z = RunFake(&tiny, specs, FakeOptions(24, 8, 3, false), false);
  for (const Recorder* r : {&x, &y, &z}) {
    ASSERT_EQ(r->out.size(), ref.out.size());
    for (const auto& [key, s] : ref.out) {
      EXPECT_EQ(r->out.at(key).ids, s.ids) << "request " << key.first << " sample " << key.second;
      EXPECT_EQ(r->out.at(key).logprob_bits, s.logprob_bits);
    }
  }
}

TEST(EngineSamplesTest, CancellingARequestEndsAllItsSamples) {
  FakeRunner runner(64, 4);
  auto engine = Engine::Create(&runner, FakeOptions(200, 8, 4, true));
  ASSERT_TRUE(engine.ok());
  Recorder rec;
  Request r;
  for (int i = 0; i < 30; ++i) r.prompt.push_back(2 + i);
  r.params.n = 3;
  r.params.max_tokens = 50;
  r.params.ignore_eos = true;
  r.on_output = rec.For(0);
  const auto cancel = r.cancelled;
  ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
  ASSERT_TRUE((*engine)->Step().ok());  // the first prefill chunk only: samples 1, 2 still wait
  EXPECT_EQ((*engine)->stats().waiting, 2);
  cancel->store(true);
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  ASSERT_EQ(rec.out.size(), 3u);
  for (const auto& [key, s] : rec.out) EXPECT_EQ(s.finish, FinishReason::kAbort);
  EXPECT_EQ((*engine)->kv().counters().used, 0);
}

// Prompt logprobs on the fake runner against a direct call with every row's logits.
TEST(EngineSamplesTest, PromptLogprobsEqualADirectForwardUnderChunkingAndPreemption) {
  const int64_t vocab = 64;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 23; ++i) prompt.push_back(static_cast<int32_t>(2 + (i * 37) % 60));
  FakeRunner direct(vocab, 4);
  ASSERT_TRUE(direct.InitPages(8).ok());
  auto seq = direct.NewSequence(static_cast<int64_t>(prompt.size()));
  std::vector<int32_t> pages = {0, 1, 2, 3, 4, 5};
  RunnerInput in;
  in.seq = seq.get();
  in.tokens = prompt;
  in.pages = pages;
  in.logits_rows = static_cast<int64_t>(prompt.size());
  std::vector<float> logits;
  ASSERT_TRUE(direct.Forward(std::span(&in, 1), &logits).ok());
  std::vector<SampleResult> want(prompt.size() - 1);
  ASSERT_TRUE(ComputePromptLogprobs(logits.data(), static_cast<int64_t>(want.size()), vocab, vocab,
                                    std::span<const int32_t>(prompt).subspan(1), 3, want)
                  .ok());

  for (const int64_t chunk : {1, 5, 64}) {
    for (const int64_t pages_budget : {int64_t{200}, int64_t{9}}) {
      FakeRunner runner(vocab, 4);
      auto engine = Engine::Create(&runner, FakeOptions(pages_budget, 4, chunk, true));
      ASSERT_TRUE(engine.ok());
      Recorder rec;
      for (int k = 0; k < 3; ++k) {  // the same prompt three times: no prefix hit may skip rows
        Request r;
        r.prompt = prompt;
        r.params.prompt_logprobs = 3;
        r.params.max_tokens = 6;
        r.params.n = k == 2 ? 2 : 1;
        r.on_output = rec.For(k);
        ASSERT_TRUE((*engine)->Add(std::move(r)).ok());
      }
      ASSERT_TRUE((*engine)->RunUntilIdle().ok());
      ASSERT_EQ(rec.out.size(), 4u);
      for (const auto& [key, s] : rec.out) {
        ASSERT_EQ(s.prompt_logprobs.size(), want.size())
            << "chunk " << chunk << " pages " << pages_budget << " request " << key.first
            << " sample " << key.second << " finish "
            << (s.finish ? FinishReasonName(*s.finish) : "none") << " ids " << s.ids.size();
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ(s.prompt_logprobs[i].token, prompt[i + 1]);
          EXPECT_EQ(std::bit_cast<uint32_t>(s.prompt_logprobs[i].logprob),
                    std::bit_cast<uint32_t>(want[i].logprob));
          ASSERT_EQ(s.prompt_logprobs[i].top.size(), 3u);
          for (size_t t = 0; t < 3; ++t) {
            EXPECT_EQ(s.prompt_logprobs[i].top[t].token, want[i].top[t].token);
          }
        }
      }
    }
  }
}

// The fixture model: n samples equal n separate requests bit for bit, and prompt logprobs
// equal log_softmax of a direct Model::Forward's logits.
class EngineSamplesModelTest : public testing::FixtureModelTest {
 protected:
  static std::unique_ptr<DeepSeekRunner> Runner() {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = model::IndexKeyMode::kOwner;
    ro.page_tokens = 8;
    auto r = DeepSeekRunner::Create(model_, ro);
    EXPECT_TRUE(r.ok());
    return std::move(*r);
  }
  static std::unique_ptr<Engine> MakeEngine(DeepSeekRunner* runner, int64_t chunk) {
    EngineOptions eo;
    eo.kv_budget_bytes = 64 * runner->page_bytes() + 8 * runner->sequence_bytes();
    eo.scheduler.max_running = 8;
    eo.scheduler.prefill_chunk = chunk;
    eo.scheduler.max_batch_tokens = 48;
    eo.check_integrity = true;
    auto e = Engine::Create(runner, eo, &model_->pool());
    EXPECT_TRUE(e.ok());
    return std::move(*e);
  }
};

TEST_F(EngineSamplesModelTest, SamplesEqualSeparateRequestsAndPromptLogprobsEqualDirect) {
  std::mt19937_64 rng(5);
  const int vocab = model_->config().vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 29; ++i) prompt.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
  auto make = [&](int32_t n, int64_t sample_index, Recorder* rec) {
    Request r;
    r.prompt = prompt;
    r.params.temperature = 1.0f;
    r.params.seed = 77;
    r.params.n = n;
    r.params.max_tokens = 6;
    r.params.ignore_eos = true;
    r.params.logprobs = true;
    r.params.prompt_logprobs = 2;
    r.sample_index = sample_index;
    r.on_output = rec->For(0);
    return r;
  };
  auto r1 = Runner();
  auto e1 = MakeEngine(r1.get(), 7);
  Recorder forked;
  ASSERT_TRUE(e1->Add(make(3, 0, &forked)).ok());
  ASSERT_TRUE(e1->RunUntilIdle().ok());
  auto r2 = Runner();
  auto e2 = MakeEngine(r2.get(), 48);
  Recorder separate;
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(e2->Add(make(1, k, &separate)).ok());
  ASSERT_TRUE(e2->RunUntilIdle().ok());
  ASSERT_EQ(forked.out.size(), 3u);
  for (const auto& [key, s] : separate.out) {
    EXPECT_EQ(forked.out.at(key).ids, s.ids) << "sample " << key.second;
    EXPECT_EQ(forked.out.at(key).logprob_bits, s.logprob_bits) << "sample " << key.second;
  }
  EXPECT_NE(forked.out.at({0, 0}).ids, forked.out.at({0, 1}).ids);  // samples do differ

  // Prompt logprobs against the model's logits of every prompt row.
  model::SequenceState st = model_->NewSequence();
  model::ForwardInput in{&st, prompt};
  model::ForwardOptions opt;
  opt.index_key_mode = model::IndexKeyMode::kOwner;
  opt.all_logits = true;
  model::ForwardOutput fo;
  ASSERT_TRUE(model_->Forward(std::span(&in, 1), opt, &fo).ok());
  std::vector<SampleResult> want(prompt.size() - 1);
  ASSERT_TRUE(ComputePromptLogprobs(fo.logits.data(), static_cast<int64_t>(want.size()), vocab,
                                    vocab, std::span<const int32_t>(prompt).subspan(1), 2, want)
                  .ok());
  for (const Recorder* rec : {&forked, &separate}) {
    for (const auto& [key, s] : rec->out) {
      ASSERT_EQ(s.prompt_logprobs.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(std::bit_cast<uint32_t>(s.prompt_logprobs[i].logprob),
                  std::bit_cast<uint32_t>(want[i].logprob))
            << "position " << i;
        EXPECT_EQ(s.prompt_logprobs[i].top[0].token, want[i].top[0].token);
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::engine
