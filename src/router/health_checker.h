// HealthChecker: the router's view of its workers, kept current. Every interval it probes each
// worker: GET /health (200 = pass), then GET /internal/info (model, fingerprint, role, page
// length, key mode, KV hand-off address; with the worker API key). A probe passes only when
// both answer (a worker without /internal/info — 404 — passes on /health alone, with its info
// unknown). HealthTracker turns the results into up / down (3 failures / 2 passes).
//
// Refusal: the first worker to register (at start-up, the first in command-line order that
// answered; later, the first to answer at all) sets the reference model name and fingerprint;
// a worker with another one is refused — logged on stderr with both values, never routed to,
// shown in /metrics — until its info matches again.
//
// One I/O thread: the probes are coroutines on it, like the requests.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "router/upstream.h"
#include "router/worker.h"

namespace deepinfer::router {

struct HealthCheckOptions {
  std::chrono::steady_clock::duration interval = std::chrono::seconds(1);
  UpstreamTimeouts timeouts{std::chrono::seconds(2), std::chrono::seconds(2)};
  std::string worker_api_key;
};

class HealthChecker {
 public:
  HealthChecker(std::vector<Worker*> workers, HealthCheckOptions options);

  // One round over every worker at once; returns when each has answered or timed out. The first
  // round also registers the reference worker.
  net::awaitable<void> ProbeAll();
  // From now on a probe per worker every interval, until Stop.
  void Start(const net::any_io_executor& executor);
  void Stop();

  // A request found the worker unreachable: counts as a failed probe.
  void NoteUnreachable(Worker& w);

  const std::optional<WorkerInfo>& reference() const { return reference_; }

 private:
  struct Probe {
    bool pass = false;
    std::optional<WorkerInfo> info;
  };
  net::awaitable<Probe> ProbeOnce(Worker& w);
  void Apply(Worker& w, const Probe& p);
  void Judge(Worker& w);
  void Record(Worker& w, bool pass);
  void WarnNoInfo(const Worker& w);
  net::awaitable<void> Loop(size_t i);

  std::vector<Worker*> workers_;
  HealthCheckOptions options_;
  std::optional<WorkerInfo> reference_;
  bool first_round_done_ = false;
  bool stopped_ = false;
  std::vector<net::steady_timer*> timers_;  // each Loop's own timer while it runs
  UpstreamCalls calls_;                     // the probes in flight (closed by Stop)
  std::set<const Worker*> warned_no_info_;
  std::set<const Worker*> warned_auth_;
};

}  // namespace deepinfer::router
