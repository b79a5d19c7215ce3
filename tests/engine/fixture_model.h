// The v41-tiny-a fixture model (real released format), loaded once per test suite, for the engine
// tests that run the real model: derive the suite's fixture class from FixtureModelTest.
#pragma once

#include <gtest/gtest.h>

#include <string>

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
  static inline model::Model* model_ = nullptr;
};

}  // namespace deepinfer::engine::testing
