// The router's /metrics in the Prometheus text format (the style of server/metrics.h):
//
//   deepinfer_router_requests_total{worker}              attempts sent to each worker (every
//                                                        route; a retried request counts on
//                                                        each worker it went to)
//   deepinfer_router_retries_total{worker}               requests the worker failed that went
//                                                        on to another worker
//   deepinfer_router_failures_total{worker}              attempts that failed there (no
//                                                        connection, a broken one, 502 / 503)
//   deepinfer_router_in_flight_tokens{worker}            gauge: prompt + max output of the
//                                                        requests outstanding there
//   deepinfer_router_worker_up{worker}                   gauge: 1 up, 0 down (health probes)
//   deepinfer_router_worker_refused{worker}              gauge: 1 when its model or fingerprint
//                                                        differs from the first worker's
//   deepinfer_router_prompt_tokens_total{worker}         generation prompt tokens sent there
//   deepinfer_router_cached_prompt_tokens_total{worker}  of which the router expected a prefix
//                                                        cache hit (hit ratio = cached / prompt)
//   deepinfer_router_cache_blocks{worker}                gauge: page-block keys listed for it
//   deepinfer_router_pd_fallbacks_total                  PD requests whose prefill leg failed
//                                                        and that the decode worker computed
//   deepinfer_router_stream_resumes_total                streams a worker broke mid-way that
//                                                        another worker continued
//   deepinfer_router_http_requests_total{route,status}   the router's own answers
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "router/worker.h"

namespace deepinfer::router {

struct RouterCounters {
  int64_t pd_fallbacks = 0;
  int64_t resumes = 0;  // streams continued on another worker (stream_resume.h)
  std::map<std::pair<std::string, int>, int64_t> http_requests;  // (route, status)
};

std::string RenderRouterMetrics(const std::vector<const Worker*>& workers,
                                const RouterCounters& counters);

}  // namespace deepinfer::router
