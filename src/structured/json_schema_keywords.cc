#include "structured/json_schema_keywords.h"

#include <algorithm>

namespace deepinfer::structured {

const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {
      "title",    "description",      "default",         "examples", "$schema",
      "$id",      "$comment",         "deprecated",      "readOnly", "writeOnly",
      "$anchor",  "contentMediaType", "contentEncoding", "$defs",    "definitions",
      "nullable", "discriminator"};
  return k;
}
const std::set<std::string>& Handled() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref"};
  return k;
}

std::string JsonTypeOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

StatusOr<Json> MergeSchemas(const Json& a, const Json& b) {
  Json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    if (!out.contains(k)) {
      out[k] = it.value();
    } else if (k == "properties") {
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        if (out[k].contains(p.key()) && out[k][p.key()] != p.value()) {
          out[k][p.key()] = Json{{"allOf", Json::array({out[k][p.key()], p.value()})}};
        } else {
          out[k][p.key()] = p.value();
        }
      }
    } else if (k == "required") {
      for (const Json& r : it.value()) {
        if (std::find(out[k].begin(), out[k].end(), r) == out[k].end()) out[k].push_back(r);
      }
    } else if (k == "type") {
      Json ta = out[k].is_array() ? out[k] : Json::array({out[k]});
      Json tb = it.value().is_array() ? it.value() : Json::array({it.value()});
      Json both = Json::array();
      for (const Json& t : ta) {
        if (std::find(tb.begin(), tb.end(), t) != tb.end()) {
          both.push_back(t);
        } else if ((t == "number" && std::find(tb.begin(), tb.end(), "integer") != tb.end()) ||
                   (t == "integer" && std::find(tb.begin(), tb.end(), "number") != tb.end())) {
          both.push_back("integer");  // number and integer intersect in integer
        }
      }
      if (both.empty()) return InvalidArgument("allOf: the types do not intersect");
      out[k] = both;
    } else if (k == "minimum" || k == "minLength" || k == "minItems" || k == "exclusiveMinimum") {
      out[k] = std::max(out[k].get<double>(), it.value().get<double>());
    } else if (k == "maximum" || k == "maxLength" || k == "maxItems" || k == "exclusiveMaximum") {
      out[k] = std::min(out[k].get<double>(), it.value().get<double>());
    } else if (Annotations().count(k) || out[k] == it.value()) {
      continue;
    } else {
      return InvalidArgument("allOf: conflicting values of '" + k + "' cannot be merged");
    }
  }
  // additionalProperties: false on one side excludes the other side's extra properties.
  for (const Json* side : {&a, &b}) {
    if (side->value("additionalProperties", Json(true)) == Json(false)) {
      for (auto p = out["properties"].begin();
           out.contains("properties") && p != out["properties"].end(); ++p) {
        if (!side->contains("properties") || !(*side)["properties"].contains(p.key())) {
          return InvalidArgument("allOf: additionalProperties false excludes property '" + p.key() +
                                 "'");
        }
      }
    }
  }
  return out;
}

}  // namespace deepinfer::structured
