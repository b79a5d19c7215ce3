// Shared by the tokenizer tests: the DeepSeek-V3 tokenizer (loaded once per process) and the
// fixture JSON Lines reader. A missing tokenizer directory fails the test (it is installed by
// scripts/install-deps.sh; CI must never silently skip the fixture comparisons).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace deepinfer::tokenizer::testing {

inline const char* TokenizerDir() { return DEEPINFER_TOKENIZER_DIR; }
inline std::string FixtureDir() {
  return std::string(DEEPINFER_SHARED_DIR) + "/fixtures/tokenizer-deepseek-v3";
}

// nullptr (after an ADD_FAILURE naming the fix) when the tokenizer cannot be loaded.
inline const Tokenizer* V3Tokenizer() {
  static const auto* tok = [] {
    auto loaded = Tokenizer::Load(TokenizerDir());
    if (!loaded.ok()) {
      ADD_FAILURE() << "cannot load the DeepSeek-V3 tokenizer from " << TokenizerDir() << ": "
                    << loaded.status().ToString()
                    << " (run scripts/install-deps.sh, or set -DDEEPINFER_TOKENIZER_DIR)";
      return static_cast<Tokenizer*>(nullptr);
    }
    return std::move(loaded).value().release();
  }();
  if (tok == nullptr) ADD_FAILURE() << "DeepSeek-V3 tokenizer unavailable";
  return tok;
}

inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace deepinfer::tokenizer::testing
