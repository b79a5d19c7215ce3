// The router's /metrics text: per-worker families with {worker="URL"}, the PD fallbacks, the
// router's own answers.
#include "router/router_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace deepinfer::router {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(RouterMetrics, PerWorkerFamilies) {
  Worker a(*ParseWorkerUrl("127.0.0.1:9001"), 10), b(*ParseWorkerUrl("127.0.0.1:9002"), 10);
  a.RecordProbe(true);
  b.RecordProbe(false);
  b.SetRefused(true);
  a.counters() = {.requests = 5,
                  .retries = 1,
                  .failures = 2,
                  .prompt_tokens = 300,
                  .cached_prompt_tokens = 128};
  a.AddInFlight(42);
  RouterCounters c;
  c.pd_fallbacks = 3;
  c.http_requests[{"/v1/completions", 200}] = 7;
  const std::string text = RenderRouterMetrics({&a, &b}, c);
  const std::string wa = "{worker=\"http://127.0.0.1:9001\"}";
  const std::string wb = "{worker=\"http://127.0.0.1:9002\"}";
  EXPECT_TRUE(HasLine(text, "deepinfer_router_requests_total" + wa + " 5")) << text;
  EXPECT_TRUE(HasLine(text, "deepinfer_router_retries_total" + wa + " 1"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_failures_total" + wa + " 2"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_in_flight_tokens" + wa + " 42"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_worker_up" + wa + " 1"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_worker_up" + wb + " 0"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_worker_refused" + wb + " 1"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_prompt_tokens_total" + wa + " 300"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_cached_prompt_tokens_total" + wa + " 128"));
  EXPECT_TRUE(HasLine(text, "deepinfer_router_pd_fallbacks_total 3"));
  EXPECT_TRUE(HasLine(
      text, "deepinfer_router_http_requests_total{route=\"/v1/completions\",status=\"200\"} 7"));
  EXPECT_TRUE(HasLine(text, "# TYPE deepinfer_router_in_flight_tokens gauge"));
  EXPECT_TRUE(HasLine(text, "# TYPE deepinfer_router_requests_total counter"));
}

}  // namespace
}  // namespace deepinfer::router
