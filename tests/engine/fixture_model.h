// The v41-tiny-a fixture model (real released format), loaded once per test suite, for the engine
// tests that run the real model: derive the suite's fixture class from FixtureModelTest.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/deepseek_v41/model.h"

namespace deepinfer::engine::testing {

inline const std::string kFixtureDir = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";

class FixtureModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = model::Model::Load(kFixtureDir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  // n random prompts of 1..max_len tokens with ids in [3, 3 + vocab - id_margin), each after
  // the same `shared` random tokens.
  static std::vector<std::vector<int32_t>> RandomPrompts(int n, uint64_t seed, int shared,
                                                         int max_len, int id_margin) {
    std::mt19937_64 rng(seed);
    const uint64_t span = static_cast<uint64_t>(model_->config().vocab_size - id_margin);
    std::vector<int32_t> prefix(shared);
    for (int32_t& t : prefix) t = static_cast<int32_t>(3 + rng() % span);
    std::vector<std::vector<int32_t>> p(n);
    for (auto& v : p) {
      v = prefix;
      const int len = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_len));
      for (int k = 0; k < len; ++k) v.push_back(static_cast<int32_t>(3 + rng() % span));
    }
    return p;
  }
  static inline model::Model* model_ = nullptr;
};

// The same suite in both index-key modes (TEST_P; GetParam() is the mode). In official mode a
// row's index keys depend on whether it is a prompt row, so these suites check that prefix hits,
// speculation, chunking and preemption keep one prefill plus one decode step per token.
class FixtureModelModeTest : public FixtureModelTest,
                             public ::testing::WithParamInterface<model::IndexKeyMode> {};

inline std::string IndexKeyModeName(const ::testing::TestParamInfo<model::IndexKeyMode>& info) {
  return info.param == model::IndexKeyMode::kOwner ? "Owner" : "Official";
}

#define DEEPINFER_BOTH_INDEX_KEY_MODES(suite)                                              \
  INSTANTIATE_TEST_SUITE_P(Modes, suite,                                                   \
                           ::testing::Values(::deepinfer::model::IndexKeyMode::kOwner,     \
                                             ::deepinfer::model::IndexKeyMode::kOfficial), \
                           ::deepinfer::engine::testing::IndexKeyModeName)

}  // namespace deepinfer::engine::testing
