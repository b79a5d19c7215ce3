// Round-robin: each request to the next candidate in turn (a counter over however many are
// routable at the time; no load or cache information).
#pragma once

#include <cstdint>

#include "dist/policy.h"

namespace deepinfer::dist {

class RoundRobin : public Policy {
 public:
  size_t Pick(std::span<const Candidate> candidates, int64_t prompt_tokens) override;

 private:
  uint64_t next_ = 0;
};

}  // namespace deepinfer::dist
