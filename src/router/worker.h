// A worker: one `deepinfer serve` instance behind the router, as the router knows it — its
// address, what GET /internal/info said (model, fingerprint, role, page length, key mode, KV
// hand-off address), its health, the block keys sent there, its in-flight tokens and its
// counters. Touched on the router's one I/O thread only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/block_key_cache.h"
#include "router/health.h"

namespace deepinfer::router {

// "http://host:port" (a trailing "/" is dropped; "host:port" alone means http). No https.
struct Endpoint {
  std::string url;  // normalized: http://host:port
  std::string host;
  uint16_t port = 0;
};
StatusOr<Endpoint> ParseWorkerUrl(std::string_view url);

// GET /internal/info of a worker.
struct WorkerInfo {
  std::string model;
  std::string fingerprint;
  std::string role = "both";  // prefill | decode | both
  int64_t page_tokens = 0;    // 0: unknown (the cache-aware policy then falls back)
  bool prompt_sensitive = false;
  std::string pd_address;  // the KV hand-off address; empty: none
};
StatusOr<WorkerInfo> ParseWorkerInfo(const nlohmann::json& body);

// Whether a worker may sit beside the reference one (the first registered): the same model name
// and fingerprint (weights, page layout, kernel level, key mode). An error names both values.
Status CheckCompatible(const WorkerInfo& reference, const WorkerInfo& info);

struct WorkerCounters {
  int64_t requests = 0;              // attempts sent here (every route)
  int64_t retries = 0;               // requests this worker failed that went to another one
  int64_t failures = 0;              // attempts that failed here (connect, connection, 502/503)
  int64_t prompt_tokens = 0;         // generation prompts sent here
  int64_t cached_prompt_tokens = 0;  // of which the router expected a cache hit
};

class Worker {
 public:
  Worker(Endpoint endpoint, int64_t cache_blocks, HealthThresholds thresholds = {});

  const std::string& url() const { return endpoint_.url; }
  const Endpoint& endpoint() const { return endpoint_; }

  // Up (health) and not refused: requests may go here.
  bool routable() const { return health_.up() && !refused_; }
  bool up() const { return health_.up(); }
  bool refused() const { return refused_; }

  // A probe's result (and a request whose connection was refused counts as a failed probe).
  // Going down drops the block keys: the worker's cache may be gone with it.
  HealthTracker::Change RecordProbe(bool pass);
  void SetInfo(WorkerInfo info) { info_ = std::move(info); }
  const std::optional<WorkerInfo>& info() const { return info_; }
  void SetRefused(bool refused) { refused_ = refused; }

  engine::BlockKeyCache& cache() { return cache_; }
  const engine::BlockKeyCache& cache() const { return cache_; }
  int64_t in_flight_tokens() const { return in_flight_tokens_; }
  void AddInFlight(int64_t tokens) { in_flight_tokens_ += tokens; }
  WorkerCounters& counters() { return counters_; }
  const WorkerCounters& counters() const { return counters_; }

 private:
  Endpoint endpoint_;
  HealthTracker health_;
  std::optional<WorkerInfo> info_;
  bool refused_ = false;
  engine::BlockKeyCache cache_;
  int64_t in_flight_tokens_ = 0;
  WorkerCounters counters_;
};

}  // namespace deepinfer::router
