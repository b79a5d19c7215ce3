#include "api/response_format.h"

namespace deepinfer::api {

nlohmann::json ResponseFormatField(const nlohmann::ordered_json& response_format) {
  nlohmann::json out = nlohmann::json::parse(response_format.dump());
  const auto js = response_format.find("json_schema");
  if (js != response_format.end() && js->is_object()) {
    const auto schema = js->find("schema");
    if (schema != js->end() && (schema->is_object() || schema->is_boolean())) {
      out["json_schema"]["schema_text"] = schema->dump();
    }
  }
  return out;
}

}  // namespace deepinfer::api
