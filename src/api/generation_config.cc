#include "api/generation_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/sampling_params_json.h"
#include "io/json_file.h"

namespace deepinfer::api {

StatusOr<GenerationDefaults> GenerationDefaultsFromJson(const nlohmann::json& config) {
  if (!config.is_object()) return InvalidArgument("a generation config must be a JSON object");
  // (file key, request key): the request reader checks types and ranges once for both.
  static constexpr std::pair<const char*, const char*> kKeys[] = {
      {"temperature", "temperature"},
      {"top_p", "top_p"},
      {"top_k", "top_k"},
      {"min_p", "min_p"},
      {"repetition_penalty", "repetition_penalty"},
      {"max_new_tokens", "max_tokens"}};
  nlohmann::json fields = nlohmann::json::object();
  GenerationDefaults d;
  for (const auto& [file_key, request_key] : kKeys) {
    auto it = config.find(file_key);
    if (it == config.end() || it->is_null()) continue;
    fields[request_key] = *it;
    d.summary += (d.summary.empty() ? "" : ", ") + std::string(file_key) + " " + it->dump();
  }
  StatusOr<engine::SamplingParams> p = SamplingParamsFromJson(fields);
  if (!p.ok()) return p.status();
  d.params = *std::move(p);
  return d;
}

StatusOr<GenerationDefaults> LoadGenerationConfig(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string file =
      fs::is_directory(path, ec) ? (fs::path(path) / kGenerationConfigFile).string() : path;
  StatusOr<nlohmann::json> config = io::LoadJsonFile(file);  // errors name the file
  if (!config.ok()) return config.status();
  StatusOr<GenerationDefaults> d = GenerationDefaultsFromJson(*config);
  if (!d.ok()) return InvalidArgument(file + ": " + d.status().message());
  d->file = file;
  return d;
}

}  // namespace deepinfer::api
