// How the router picks a worker for a request: the candidates as plain numbers (no HTTP, no
// worker objects), a policy that returns one of them. Each policy is one file:
//   round_robin.h    in turn
//   power_of_two.h   two at random, the one with fewer in-flight tokens
//   cache_aware.h    the least work: in-flight tokens + the prompt tokens it would compute
// The pool (worker_pool.h) builds the candidates from the routable workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace deepinfer::dist {

// One routable worker as a policy sees it. Token counts are tokens of work.
struct Candidate {
  int64_t in_flight_tokens = 0;  // prompt + max output of the requests outstanding there
  int64_t cached_tokens = 0;     // of this request's prompt, the router's estimate of the
                                 // leading tokens the worker holds (full pages only)
  int64_t cache_blocks = 0;      // page-block keys the router lists for the worker (all prompts)
};

class Policy {
 public:
  virtual ~Policy() = default;
  // The index of the chosen candidate; `candidates` is not empty. prompt_tokens: the request's
  // prompt length (an estimate when it was not tokenized).
  virtual size_t Pick(std::span<const Candidate> candidates, int64_t prompt_tokens) = 0;
  // Whether Pick reads Candidate::cached_tokens (the pool then computes the prompt's block keys).
  virtual bool uses_cache() const { return false; }
};

enum class PolicyKind { kCacheAware, kPowerOfTwo, kRoundRobin };

// "cache-aware" | "power-of-two" | "round-robin".
std::optional<PolicyKind> ParsePolicyKind(const std::string& name);
const char* PolicyName(PolicyKind kind);

struct PolicyOptions {
  // Cache-aware: the load counts as uneven when max - min in-flight tokens > balance_abs_tokens
  // and max > balance_rel * min; then the least loaded worker gets the request whatever its
  // cache holds (sgl-router's thresholds: 64 requests and 1.5; here 64 requests of ~1K tokens).
  int64_t balance_abs_tokens = 64 * 1024;
  double balance_rel = 1.5;
  // Cache-aware: a worker already holding at least this fraction of the prompt (the most among
  // the workers) gets it unless the load is uneven (as sgl-router's cache_threshold); below it,
  // the least tokens of work (in flight + uncached prompt) decide.
  double cache_threshold = 0.5;
  uint64_t seed = 0;  // power-of-two draws (and cache-aware's fallback)
};

std::unique_ptr<Policy> MakePolicy(PolicyKind kind, const PolicyOptions& options);

}  // namespace deepinfer::dist
