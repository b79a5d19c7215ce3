#include "model/deepseek_v41/engram_token_map.h"

#include <limits>

#include "io/json_file.h"
#include "nlohmann/json.hpp"

namespace deepinfer::model {

Status ValidateEngramTokenMap(const EngramTokenMap& token_map, const ModelConfig& config) {
  if (token_map.compressed_vocab_size != config.engram_compressed_vocab_size) {
    return InvalidArgument("engram token map: compressed_vocab_size " +
                           std::to_string(token_map.compressed_vocab_size) +
                           " differs from the config's engram_compressed_vocab_size " +
                           std::to_string(config.engram_compressed_vocab_size) +
                           " (the hash multipliers derive from it)");
  }
  if (token_map.map.size() != static_cast<size_t>(config.vocab_size)) {
    return InvalidArgument("engram token map: map has " + std::to_string(token_map.map.size()) +
                           " entries but vocab_size is " + std::to_string(config.vocab_size));
  }
  for (size_t i = 0; i < token_map.map.size(); ++i) {
    const int32_t c = token_map.map[i];
    if (c < 0 || c >= token_map.compressed_vocab_size) {
      return InvalidArgument("engram token map: map[" + std::to_string(i) +
                             "] = " + std::to_string(c) + " is outside [0, " +
                             std::to_string(token_map.compressed_vocab_size) + ")");
    }
  }
  return Status::Ok();
}

StatusOr<EngramTokenMap> ParseEngramTokenMap(const nlohmann::json& json, const ModelConfig& config,
                                             const std::string& display_name) {
  const std::string where = display_name + ": ";
  if (!json.is_object()) return InvalidArgument(where + "expected a JSON object");
  auto size_it = json.find("compressed_vocab_size");
  if (size_it == json.end() || !size_it->is_number_integer()) {
    return InvalidArgument(where + "compressed_vocab_size is missing or not an integer");
  }
  const int64_t size = size_it->get<int64_t>();
  if (size <= 0 || size > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument(where + "compressed_vocab_size " + std::to_string(size) +
                           " is out of range");
  }
  auto map_it = json.find("map");
  if (map_it == json.end() || !map_it->is_array()) {
    return InvalidArgument(where + "map is missing or not an array");
  }
  EngramTokenMap token_map;
  token_map.compressed_vocab_size = static_cast<int32_t>(size);
  token_map.map.reserve(map_it->size());
  for (size_t i = 0; i < map_it->size(); ++i) {
    const nlohmann::json& v = (*map_it)[i];
    // Range is checked by ValidateEngramTokenMap; here only "fits int32".
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument(where + "map[" + std::to_string(i) + "] is not a 32-bit integer");
    }
    token_map.map.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  Status status = ValidateEngramTokenMap(token_map, config);
  if (!status.ok()) return InvalidArgument(where + status.message());
  return token_map;
}

StatusOr<EngramTokenMap> LoadEngramTokenMap(const std::string& path, const ModelConfig& config) {
  DI_ASSIGN_OR_RETURN(nlohmann::json json, io::LoadJsonFile(path));
  return ParseEngramTokenMap(json, config, path);
}

}  // namespace deepinfer::model
