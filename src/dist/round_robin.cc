#include "dist/round_robin.h"

#include "core/check.h"

namespace deepinfer::dist {

size_t RoundRobin::Pick(std::span<const Candidate> candidates, int64_t /*prompt_tokens*/) {
  CHECK(!candidates.empty());
  return static_cast<size_t>(next_++ % candidates.size());
}

}  // namespace deepinfer::dist
