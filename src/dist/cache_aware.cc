#include "dist/cache_aware.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer::dist {

bool CacheAware::Unbalanced(std::span<const Candidate> candidates) const {
  const auto [lo, hi] = std::minmax_element(candidates.begin(), candidates.end(),
                                            [](const Candidate& a, const Candidate& b) {
                                              return a.in_flight_tokens < b.in_flight_tokens;
                                            });
  const double max = static_cast<double>(hi->in_flight_tokens);
  const double min = static_cast<double>(lo->in_flight_tokens);
  return max - min > static_cast<double>(options_.balance_abs_tokens) &&
         max > options_.balance_rel * min;
}

size_t CacheAware::Pick(std::span<const Candidate> candidates, int64_t prompt_tokens) {
  CHECK(!candidates.empty());
  const bool balance = Unbalanced(candidates);
  const auto cost = [&](const Candidate& c) {
    return c.in_flight_tokens + (prompt_tokens - std::min(c.cached_tokens, prompt_tokens));
  };
  // Scanned from a rotating start and replaced only by a strictly better candidate, so that
  // exact ties (e.g. short prompts with no full page, on idle workers) take turns.
  const size_t n = candidates.size();
  const size_t start = static_cast<size_t>(turn_++ % n);
  size_t best = start;
  // Affinity first: the best holder of the prompt, when it holds enough of it.
  if (!balance && prompt_tokens > 0) {
    size_t holder = start;
    for (size_t k = 1; k < n; ++k) {
      const size_t i = (start + k) % n;
      const Candidate& c = candidates[i];
      const Candidate& h = candidates[holder];
      if (c.cached_tokens > h.cached_tokens ||
          (c.cached_tokens == h.cached_tokens && cost(c) < cost(h))) {
        holder = i;
      }
    }
    if (static_cast<double>(candidates[holder].cached_tokens) >=
        options_.cache_threshold * static_cast<double>(prompt_tokens)) {
      return holder;
    }
  }
  for (size_t k = 1; k < n; ++k) {
    const size_t i = (start + k) % n;
    const Candidate& c = candidates[i];
    const Candidate& b = candidates[best];
    if (balance) {
      // The least loaded; among equals the one holding more of the prompt.
      if (c.in_flight_tokens < b.in_flight_tokens ||
          (c.in_flight_tokens == b.in_flight_tokens && c.cached_tokens > b.cached_tokens)) {
        best = i;
      }
    } else if (cost(c) < cost(b) || (cost(c) == cost(b) && c.cache_blocks < b.cache_blocks)) {
      best = i;
    }
  }
  return best;
}

}  // namespace deepinfer::dist
