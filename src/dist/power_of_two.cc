#include "dist/power_of_two.h"

#include "core/check.h"

namespace deepinfer::dist {

size_t PowerOfTwo::Pick(std::span<const Candidate> candidates, int64_t /*prompt_tokens*/) {
  CHECK(!candidates.empty());
  const size_t n = candidates.size();
  if (n == 1) return 0;
  const size_t a = std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  size_t b = std::uniform_int_distribution<size_t>(0, n - 2)(rng_);
  if (b >= a) ++b;  // distinct from a
  return candidates[b].in_flight_tokens < candidates[a].in_flight_tokens ? b : a;
}

}  // namespace deepinfer::dist
