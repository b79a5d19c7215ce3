#include "router/router_metrics.h"

#include <cstdio>
#include <functional>

namespace deepinfer::router {
namespace {

// A label value with \ " and newlines escaped (the exposition format's rule).
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void PerWorker(const char* name, const char* type, const char* help,
               const std::vector<const Worker*>& workers,
               const std::function<int64_t(const Worker&)>& value, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const Worker* w : workers) {
    *out += std::string(name) + "{worker=\"" + Label(w->url()) + "\"} " +
            std::to_string(value(*w)) + "\n";
  }
}

}  // namespace

std::string RenderRouterMetrics(const std::vector<const Worker*>& workers,
                                const RouterCounters& counters) {
  std::string out;
  PerWorker(
      "deepinfer_router_requests_total", "counter", "requests sent to each worker", workers,
      [](const Worker& w) { return w.counters().requests; }, &out);
  PerWorker(
      "deepinfer_router_retries_total", "counter",
      "requests each worker failed that were retried on another worker", workers,
      [](const Worker& w) { return w.counters().retries; }, &out);
  PerWorker(
      "deepinfer_router_failures_total", "counter",
      "requests that failed on each worker (connection, 502/503, broken stream)", workers,
      [](const Worker& w) { return w.counters().failures; }, &out);
  PerWorker(
      "deepinfer_router_in_flight_tokens", "gauge",
      "prompt + max output tokens of the requests outstanding on each worker", workers,
      [](const Worker& w) { return w.in_flight_tokens(); }, &out);
  PerWorker(
      "deepinfer_router_worker_up", "gauge", "1 if the worker passes its health probes", workers,
      [](const Worker& w) { return int64_t{w.up()}; }, &out);
  PerWorker(
      "deepinfer_router_worker_refused", "gauge",
      "1 if the worker's model or fingerprint differs from the first worker's", workers,
      [](const Worker& w) { return int64_t{w.refused()}; }, &out);
  PerWorker(
      "deepinfer_router_prompt_tokens_total", "counter",
      "generation prompt tokens sent to each worker", workers,
      [](const Worker& w) { return w.counters().prompt_tokens; }, &out);
  PerWorker(
      "deepinfer_router_cached_prompt_tokens_total", "counter",
      "of those, the tokens the router expected in the worker's prefix cache", workers,
      [](const Worker& w) { return w.counters().cached_prompt_tokens; }, &out);
  PerWorker(
      "deepinfer_router_cache_blocks", "gauge",
      "page-block keys the router lists for each worker's prefix cache", workers,
      [](const Worker& w) { return w.cache().size(); }, &out);
  out +=
      "# HELP deepinfer_router_pd_fallbacks_total PD requests whose prefill leg failed and "
      "that the decode worker computed itself\n# TYPE deepinfer_router_pd_fallbacks_total "
      "counter\ndeepinfer_router_pd_fallbacks_total " +
      std::to_string(counters.pd_fallbacks) + "\n";
  out +=
      "# HELP deepinfer_router_stream_resumes_total streams a worker broke that another worker "
      "continued\n# TYPE deepinfer_router_stream_resumes_total counter\n"
      "deepinfer_router_stream_resumes_total " +
      std::to_string(counters.resumes) + "\n";
  out +=
      "# HELP deepinfer_router_http_requests_total requests the router answered, by route and "
      "status\n# TYPE deepinfer_router_http_requests_total counter\n";
  for (const auto& [key, n] : counters.http_requests) {
    out += "deepinfer_router_http_requests_total{route=\"" + Label(key.first) + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace deepinfer::router
