// WorkerPool: a set of workers (all of them, or a prefill / decode pool) and the policy that
// picks among them. Choose builds each routable worker's dist::Candidate (in-flight tokens; for the
// cache-aware policy the prompt's page-block keys, engine::AppendBlockKeys at the worker's page
// length and key mode, matched against the keys the router sent there) and asks the policy.
// The cache-aware policy needs the prompt's tokens and every candidate's page length: without
// them it falls back to power of two choices for that request.
//
// Dispatch records that the request is really sent: its keys go into the worker's cache map,
// its tokens count in the worker's in-flight load and counters until the returned Lease ends.
// One I/O thread: no locking.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "dist/policy.h"
#include "engine/kv_cache_manager.h"
#include "router/request_facts.h"
#include "router/worker.h"

namespace deepinfer::router {

struct Choice {
  Worker* worker = nullptr;
  int64_t cached_tokens = 0;           // the router's estimate (0 without keys)
  std::vector<engine::BlockKey> keys;  // the prompt's full-block keys for this worker
  bool fell_back = false;              // cache-aware could not apply (power of two chose)
};

// A request outstanding on a worker: its work tokens count in the worker's in-flight load
// until the lease ends (destroyed, or End); the prompt's share of them (`prefill` tokens) only
// until PrefillDone (its first answer bytes: the worker has computed the prompt), so a worker
// that holds streams which only decode does not look as busy as one still prefilling.
class Lease {
 public:
  Lease() = default;
  Lease(Worker* worker, int64_t tokens, int64_t prefill = 0)
      : worker_(worker), tokens_(tokens), prefill_(std::min(prefill, tokens)) {
    worker_->AddInFlight(tokens_);
  }
  Lease(Lease&& o) noexcept : worker_(o.worker_), tokens_(o.tokens_), prefill_(o.prefill_) {
    o.worker_ = nullptr;
  }
  Lease& operator=(Lease&& o) noexcept {
    if (this != &o) {
      End();
      worker_ = o.worker_;
      tokens_ = o.tokens_;
      prefill_ = o.prefill_;
      o.worker_ = nullptr;
    }
    return *this;
  }
  void PrefillDone() {
    if (worker_ == nullptr) return;
    worker_->AddInFlight(-prefill_);
    tokens_ -= prefill_;
    prefill_ = 0;
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { End(); }
  void End() {
    if (worker_ != nullptr) worker_->AddInFlight(-tokens_);
    worker_ = nullptr;
  }

 private:
  Worker* worker_ = nullptr;
  int64_t tokens_ = 0;
  int64_t prefill_ = 0;
};

class WorkerPool {
 public:
  WorkerPool(std::vector<Worker*> workers, dist::PolicyKind kind,
             const dist::PolicyOptions& options);

  // The worker for a request among the routable ones not in `exclude` (already tried); nullopt
  // when there is none. `facts` may be default (a route without a prompt: no cache, no load).
  std::optional<Choice> Choose(const RequestFacts& facts, std::span<Worker* const> exclude = {});

  // The request goes to choice.worker: counts it (requests, `prompt_tokens` and the expected
  // hit among them), adds the keys to the worker's map, and holds `work_tokens` less the
  // expected hit in flight (the work the worker will really do: a held prefix costs it nothing,
  // so a worker holding a hot prefix does not look busier than it is).
  static Lease Dispatch(const Choice& choice, int64_t prompt_tokens, int64_t work_tokens);

  const std::vector<Worker*>& workers() const { return workers_; }
  bool empty() const { return workers_.empty(); }
  // Routable workers not in `exclude`.
  int64_t CountRoutable(std::span<Worker* const> exclude = {}) const;

 private:
  std::vector<Worker*> workers_;
  std::unique_ptr<dist::Policy> policy_;
  std::unique_ptr<dist::Policy> fallback_;  // power of two, when cache-aware cannot apply
};

}  // namespace deepinfer::router
