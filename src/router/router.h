// Router: `deepinfer route`, one OpenAI- and Anthropic-compatible endpoint in front of N
// `deepinfer serve` workers (docs/server.md "Router"; the design is docs/scaleout.md 2.6).
//
//   client ──HTTP──> server::ServeHttp (the server's own front end: auth, limits, drain)
//                      └─ Router handlers (one I/O thread)
//                           generation: ReadRequestFacts (prompt tokens) -> WorkerPool::Choose
//                             (policy) -> Relay (UpstreamCall to the worker, its answer back as
//                             it arrives) -> retry elsewhere on an early failure
//                           PD mode: PdPlan: prefill leg on P, then the request to D
//                           other routes: any routable worker, in turn
//                      HealthChecker: GET /health + /internal/info every second
//
// The same routes as serve (/v1/chat/completions, /v1/completions, /v1/messages,
// /v1/messages/count_tokens, /v1/models, /tokenize, /detokenize, /health, /metrics), the same
// Bearer auth and error formats. /health and /metrics are the router's own: /health answers 200
// while a worker is routable (503 otherwise), /metrics is router_metrics.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/policy.h"
#include "router/health_checker.h"
#include "router/pd_plan.h"
#include "router/relay.h"
#include "router/request_facts.h"
#include "router/retry.h"
#include "router/router_metrics.h"
#include "router/worker_pool.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::router {

struct RouterOptions {
  server::ServerOptions http;        // host, port, API key, body limit, drain
  std::vector<std::string> workers;  // colocated workers (role both)
  std::vector<std::string> prefill;  // PD mode: both lists given, --worker empty
  std::vector<std::string> decode;
  dist::PolicyKind policy = dist::PolicyKind::kCacheAware;  // --worker pool, or the prefill pool
  dist::PolicyOptions policy_options;
  std::string tokenizer_dir;   // empty: no tokenizer (cache-aware falls back for text)
  std::string worker_api_key;  // empty: the client's credentials go through
  RetryOptions retry;
  HealthThresholds health;
  HealthCheckOptions health_check;
  UpstreamTimeouts timeouts;
  int64_t cache_blocks = 65536;  // page-block keys listed per worker (LRU)
  // PD mode: prompts shorter than this go straight to a decode instance (a prefill leg would
  // hand over few or no complete pages and cost a second prefill); 0 = every prompt.
  int64_t pd_min_prompt_tokens = 256;
};

class Router {
 public:
  static StatusOr<std::unique_ptr<Router>> Create(RouterOptions options);
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The routes and hooks ServeHttp runs.
  server::HttpApp App();
  bool pd_mode() const { return pd_mode_; }
  size_t n_workers() const { return workers_.size(); }

 private:
  explicit Router(RouterOptions options);

  net::awaitable<void> Start();
  net::awaitable<void> Generation(server::Exchange& ex, GenerationApi api, server::ApiStyle style);
  net::awaitable<void> AnyWorker(server::Exchange& ex, server::ApiStyle style);
  net::awaitable<void> Health(server::Exchange& ex);
  net::awaitable<void> Metrics(server::Exchange& ex);

  // The request to a worker of `pool` (`first` if given), retried on others while it fails
  // before any byte reached the client. first_prompt_tokens: the prompt tokens the first
  // worker computes (0 when a prefill worker already did), later ones facts.prompt_tokens.
  net::awaitable<void> Forward(server::Exchange& ex, server::ApiStyle style, WorkerPool& pool,
                               const RequestFacts& facts, std::optional<Choice> first,
                               int64_t first_prompt_tokens);
  net::awaitable<void> PdGeneration(server::Exchange& ex, server::ApiStyle style,
                                    const RequestFacts& facts);
  // POST P /internal/pd/prefill; *client_gone when the client left meanwhile.
  net::awaitable<PrefillOutcome> PrefillLeg(server::Exchange& ex, const Choice& p,
                                            const RequestFacts& facts,
                                            const nlohmann::ordered_json& request,
                                            const std::string& decode_address, bool* client_gone);
  // A stream no worker could continue: an error event in the route's format, then the end.
  net::awaitable<void> StreamBroke(server::Exchange& ex, server::ApiStyle style,
                                   const RelayResult& r);

  RouterOptions options_;
  bool pd_mode_ = false;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<WorkerPool> main_;     // --worker
  std::unique_ptr<WorkerPool> prefill_;  // PD mode
  std::unique_ptr<WorkerPool> decode_;   // PD mode
  std::unique_ptr<WorkerPool> any_;      // every worker, in turn (routes without an engine)
  std::unique_ptr<HealthChecker> health_;
  Backoff backoff_;
  UpstreamCalls calls_;  // forwarded requests in flight (closed at the drain timeout)
  RouterCounters counters_;
};

// Runs the router until SIGINT / SIGTERM and the drain.
Status RunRouter(RouterOptions options);

}  // namespace deepinfer::router
