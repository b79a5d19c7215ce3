// Shared helpers of the model tests: the tiny fixture's folder and quiet checkpoint opening.
#pragma once

#include <string>
#include <utility>

#include "core/check.h"
#include "io/checkpoint.h"

namespace deepinfer::model::test {

inline std::string TinyFixtureDir() {
  return std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";
}

// Opens a checkpoint without a progress bar; CHECK-fails on error (test setup).
inline io::Checkpoint OpenCheckpointQuiet(const std::string& path) {
  io::CheckpointOptions o;
  o.show_progress = false;
  StatusOr<io::Checkpoint> c = io::Checkpoint::Open(path, o);
  CHECK(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

}  // namespace deepinfer::model::test
