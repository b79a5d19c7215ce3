#include "router/worker_pool.h"

#include <algorithm>
#include <map>
#include <utility>

namespace deepinfer::router {

WorkerPool::WorkerPool(std::vector<Worker*> workers, dist::PolicyKind kind,
                       const dist::PolicyOptions& options)
    : workers_(std::move(workers)),
      policy_(dist::MakePolicy(kind, options)),
      fallback_(dist::MakePolicy(dist::PolicyKind::kPowerOfTwo, options)) {}

int64_t WorkerPool::CountRoutable(std::span<Worker* const> exclude) const {
  int64_t n = 0;
  for (Worker* w : workers_) {
    if (w->routable() && std::find(exclude.begin(), exclude.end(), w) == exclude.end()) ++n;
  }
  return n;
}

std::optional<Choice> WorkerPool::Choose(const RequestFacts& facts,
                                         std::span<Worker* const> exclude) {
  std::vector<Worker*> routable;
  for (Worker* w : workers_) {
    if (w->routable() && std::find(exclude.begin(), exclude.end(), w) == exclude.end()) {
      routable.push_back(w);
    }
  }
  if (routable.empty()) return std::nullopt;
  bool use_cache = policy_->uses_cache() && !facts.prompt.empty();
  for (const Worker* w : routable) {
    if (!w->info() || w->info()->page_tokens <= 0) use_cache = false;
  }
  std::vector<dist::Candidate> candidates(routable.size());
  // The prompt's keys per (page length, key mode): workers behind one router share a
  // fingerprint, so in practice there is one entry.
  std::map<std::pair<int64_t, bool>, std::vector<engine::BlockKey>> keys_by_layout;
  std::vector<const std::vector<engine::BlockKey>*> keys_of(routable.size(), nullptr);
  for (size_t i = 0; i < routable.size(); ++i) {
    Worker* w = routable[i];
    candidates[i].in_flight_tokens = w->in_flight_tokens();
    candidates[i].cache_blocks = w->cache().size();
    if (!use_cache) continue;
    const std::pair<int64_t, bool> layout{w->info()->page_tokens, w->info()->prompt_sensitive};
    auto [it, inserted] = keys_by_layout.try_emplace(layout);
    if (inserted) {
      engine::AppendBlockKeys(facts.prompt, static_cast<int64_t>(facts.prompt.size()), layout.first,
                              layout.second, &it->second);
    }
    keys_of[i] = &it->second;
    candidates[i].cached_tokens = w->cache().MatchedBlocks(it->second) * layout.first;
  }
  dist::Policy& policy = use_cache || !policy_->uses_cache() ? *policy_ : *fallback_;
  const size_t pick = policy.Pick(candidates, facts.prompt_tokens);
  Choice c;
  c.worker = routable[pick];
  c.cached_tokens = candidates[pick].cached_tokens;
  if (keys_of[pick] != nullptr) {
    c.keys = *keys_of[pick];
  } else if (!facts.prompt.empty() && c.worker->info() && c.worker->info()->page_tokens > 0) {
    // Another policy chose: the keys still go into the worker's map (a later cache-aware pick,
    // and the hit estimate in /metrics, read them).
    engine::AppendBlockKeys(facts.prompt, static_cast<int64_t>(facts.prompt.size()),
                            c.worker->info()->page_tokens, c.worker->info()->prompt_sensitive,
                            &c.keys);
    c.cached_tokens = c.worker->cache().MatchedBlocks(c.keys) * c.worker->info()->page_tokens;
  }
  c.fell_back = policy_->uses_cache() && !use_cache;
  return c;
}

Lease WorkerPool::Dispatch(const Choice& choice, int64_t prompt_tokens, int64_t work_tokens) {
  Worker* w = choice.worker;
  WorkerCounters& c = w->counters();
  ++c.requests;
  c.prompt_tokens += prompt_tokens;
  const int64_t hit = std::min(choice.cached_tokens, prompt_tokens);
  c.cached_prompt_tokens += hit;
  w->cache().Insert(choice.keys);
  return Lease(w, std::max<int64_t>(work_tokens - hit, 0),
               std::max<int64_t>(prompt_tokens - hit, 0));
}

}  // namespace deepinfer::router
