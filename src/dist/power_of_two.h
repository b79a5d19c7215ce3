// Power of two choices: two distinct candidates drawn at random, the one with fewer in-flight
// tokens (the first drawn on a tie). Nearly as even as the least loaded worker, without every
// request of a burst piling onto the same one.
#pragma once

#include <cstdint>
#include <random>

#include "dist/policy.h"

namespace deepinfer::dist {

class PowerOfTwo : public Policy {
 public:
  explicit PowerOfTwo(uint64_t seed) : rng_(seed) {}
  size_t Pick(std::span<const Candidate> candidates, int64_t prompt_tokens) override;

 private:
  std::mt19937_64 rng_;
};

}  // namespace deepinfer::dist
