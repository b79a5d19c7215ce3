// Cache-aware, in order:
//   1. uneven load (PolicyOptions::balance_*): the least loaded candidate, whatever the caches
//      hold;
//   2. affinity: the candidate holding the most of the prompt, when that is at least
//      cache_threshold of it (sgl-router's rule; the load thresholds above bound the pinning of
//      a hot prefix);
//   3. otherwise the least work for this request,
//        cost(w) = in_flight_tokens(w) + (prompt_tokens - cached_tokens(w)),
//      what it already has to do plus the prompt tokens it would compute.
// In-flight tokens count a request's uncached prompt only until its first answer bytes
// (worker_pool.h, Lease). Ties: the candidate whose cache the router lists fewer keys for (new
// prefixes spread), then in turn.
#pragma once

#include <cstdint>

#include "dist/policy.h"

namespace deepinfer::dist {

class CacheAware : public Policy {
 public:
  explicit CacheAware(const PolicyOptions& options) : options_(options) {}
  size_t Pick(std::span<const Candidate> candidates, int64_t prompt_tokens) override;
  bool uses_cache() const override { return true; }

  // Whether in-flight loads this uneven call for the least loaded worker.
  bool Unbalanced(std::span<const Candidate> candidates) const;

 private:
  PolicyOptions options_;
  uint64_t turn_ = 0;
};

}  // namespace deepinfer::dist
