// Cache-aware: the candidate with the least work for this request,
//   cost(w) = in_flight_tokens(w) + (prompt_tokens - cached_tokens(w)),
// i.e. what it already has to do plus the prompt tokens it would compute (the rest comes from
// its prefix cache). A shared prefix therefore stays on the worker that holds it, until that
// worker's queue outweighs recomputing the prefix elsewhere (no hot-prefix pinning).
// Uneven load (PolicyOptions::balance_*): the least loaded candidate, whatever the caches hold.
// Ties: the candidate whose cache the router lists fewer keys for (new prefixes spread), then
// in turn.
#pragma once

#include <cstdint>

#include "router/policy.h"

namespace deepinfer::router {

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

}  // namespace deepinfer::router
