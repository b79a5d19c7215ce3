#include "tools/server_counters.h"

#include <cstdlib>
#include <sstream>

#include "engine/engine.h"

namespace deepinfer::tools {
namespace {

// The value of an unlabelled sample line "name value"; nullopt if absent.
std::optional<double> Sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 ||
        line[name.size()] != ' ') {
      continue;
    }
    const char* begin = line.c_str() + name.size() + 1;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

double Ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

std::optional<ServerCounters> ParseServerCounters(const std::string& metrics_text) {
  const auto step = Sample(metrics_text, "deepinfer_engine_step_seconds_total");
  const auto forward = Sample(metrics_text, "deepinfer_engine_forward_seconds_total");
  const auto spec = Sample(metrics_text, "deepinfer_engine_spec_seconds_total");
  const auto http = Sample(metrics_text, "deepinfer_http_thread_cpu_seconds_total");
  const auto process = Sample(metrics_text, "process_cpu_seconds_total");
  if (!step || !forward || !spec || !http || !process) return std::nullopt;
  return ServerCounters{*step, *forward, *spec, *http, *process};
}

std::optional<ServerCounters> ScrapeServerCounters(const HttpEndpoint& ep,
                                                   const std::string& api_key) {
  StatusOr<std::string> text = HttpGet(ep, "/metrics", api_key, 30);
  if (!text.ok()) return std::nullopt;
  return ParseServerCounters(*text);
}

nlohmann::ordered_json ServerOverheadJson(const ServerCounters& before, const ServerCounters& after,
                                          double duration_s) {
  const double step = after.step_s - before.step_s;
  const double forward = after.forward_s - before.forward_s;
  const double spec = after.spec_s - before.spec_s;
  const double http = after.http_cpu_s - before.http_cpu_s;
  const double process = after.process_cpu_s - before.process_cpu_s;
  const double scheduling = engine::SchedulingFraction(step, forward, spec);
  const double http_share = Ratio(http, process);
  nlohmann::ordered_json j;
  j["engine_step_s"] = step;
  j["forward_s"] = forward;
  j["spec_s"] = spec;
  j["http_thread_cpu_s"] = http;
  j["process_cpu_s"] = process;
  j["scheduling_fraction"] = scheduling;
  j["http_cpu_fraction"] = http_share;
  j["overhead_fraction"] = scheduling + http_share;
  j["forward_busy_fraction"] = Ratio(forward, duration_s);
  return j;
}

}  // namespace deepinfer::tools
