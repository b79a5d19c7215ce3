// JSON Schema keyword facts the converter and its checks share: which keywords are annotations
// or handled, the JSON type of a value, and the allOf merge of two schemas.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/status.h"

namespace deepinfer::structured {

using Json = nlohmann::ordered_json;  // keeps the schema's property order

// Keywords that never constrain (title, description, $defs, ...).
const std::set<std::string>& Annotations();
// Keywords the converter implements.
const std::set<std::string>& Handled();
// "null", "boolean", "integer", "number", "string", "array" or "object".
std::string JsonTypeOf(const Json& v);
// allOf-style merge of two schemas (both without allOf/anyOf/oneOf/$ref): properties and
// required united, types intersected, bounds tightened; conflicting values are InvalidArgument.
StatusOr<Json> MergeSchemas(const Json& a, const Json& b);

}  // namespace deepinfer::structured
