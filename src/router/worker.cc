#include "router/worker.h"

#include <optional>

#include "core/parse_port.h"

namespace deepinfer::router {

StatusOr<Endpoint> ParseWorkerUrl(std::string_view url) {
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    return InvalidArgument("worker " + std::string(url) + ": https is not supported");
  }
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  while (rest.ends_with('/')) rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || rest.find('/') != std::string_view::npos) {
    return InvalidArgument("worker " + std::string(url) + ": expected http://host:port");
  }
  std::string_view host = rest.substr(0, colon);
  const std::string_view port_text = rest.substr(colon + 1);
  const std::optional<uint16_t> port = ParsePort(port_text);
  if (!port) return InvalidArgument("worker " + std::string(url) + ": bad port");
  Endpoint e;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {  // [v6]
    host = host.substr(1, host.size() - 2);
  }
  e.host = std::string(host);
  e.port = *port;
  e.url = "http://" + std::string(rest);
  return e;
}

StatusOr<WorkerInfo> ParseWorkerInfo(const nlohmann::json& body) {
  if (!body.is_object()) return InvalidArgument("/internal/info: not a JSON object");
  WorkerInfo info;
  const auto str = [&](const char* key, std::string* out) -> Status {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return InvalidArgument(std::string("/internal/info: ") + key);
    *out = it->get<std::string>();
    return Status::Ok();
  };
  DI_RETURN_IF_ERROR(str("model", &info.model));
  DI_RETURN_IF_ERROR(str("fingerprint", &info.fingerprint));
  DI_RETURN_IF_ERROR(str("role", &info.role));
  DI_RETURN_IF_ERROR(str("pd_address", &info.pd_address));
  if (const auto it = body.find("page_tokens"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return InvalidArgument("/internal/info: page_tokens");
    }
    info.page_tokens = it->get<int64_t>();
  }
  if (const auto it = body.find("prompt_sensitive"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidArgument("/internal/info: prompt_sensitive");
    info.prompt_sensitive = it->get<bool>();
  }
  return info;
}

Status CheckCompatible(const WorkerInfo& reference, const WorkerInfo& info) {
  if (info.model != reference.model) {
    return InvalidArgument("model \"" + info.model + "\" differs from the first worker's \"" +
                           reference.model + "\"");
  }
  if (info.fingerprint != reference.fingerprint) {
    return InvalidArgument("fingerprint " + info.fingerprint + " differs from the first worker's " +
                           reference.fingerprint);
  }
  return Status::Ok();
}

Worker::Worker(Endpoint endpoint, int64_t cache_blocks, HealthThresholds thresholds)
    : endpoint_(std::move(endpoint)), health_(thresholds), cache_(cache_blocks) {}

HealthTracker::Change Worker::RecordProbe(bool pass) {
  const HealthTracker::Change change = health_.Record(pass);
  if (change == HealthTracker::Change::kDown) cache_.Clear();
  return change;
}

}  // namespace deepinfer::router
