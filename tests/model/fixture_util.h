// Shared helpers of the model tests: the tiny fixture's folder and quiet checkpoint opening.
#pragma once

#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "core/check.h"
#include "io/checkpoint.h"

namespace deepinfer::model::test {

inline std::string TinyFixtureDir() {
  return std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";
}
// The tiny fixture's folder, and the configs under tests/model/testdata/deepseek_v41.
inline const std::string kFixtureDir = TinyFixtureDir();
inline const std::string kTestData =
    std::string(DEEPINFER_SOURCE_DIR) + "/tests/model/testdata/deepseek_v41";

// Opens a checkpoint without a progress bar; CHECK-fails on error (test setup).
inline io::Checkpoint OpenCheckpointQuiet(const std::string& path) {
  io::CheckpointOptions o;
  o.show_progress = false;
  StatusOr<io::Checkpoint> c = io::Checkpoint::Open(path, o);
  CHECK(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// Bitwise equality of two float ranges. memcmp needs non-null pointers even for zero bytes, and
// an empty vector may hold none, so empty ranges are compared by size alone.
inline bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace deepinfer::model::test
