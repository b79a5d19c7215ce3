#include "structured/json_schema_keywords.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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
                                          "additionalItems",
                                          "minProperties",
                                          "maxProperties",
                                          "multipleOf",
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
                                          "contains",
                                          "dependentRequired",
                                          "dependentSchemas",
                                          "dependencies",
                                          "patternProperties",
                                          "propertyNames",
                                          "if",
                                          "then",
                                          "else",
                                          "minContains",
                                          "maxContains",
                                          "uniqueItems",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref"};
  return k;
}

const std::set<std::string>& Unsupported() {
  static const std::set<std::string> k = {"not", "$dynamicRef", "$recursiveRef"};
  return k;
}

bool IsAnnotation(const std::string& key) {
  return Annotations().count(key) > 0 || (!Handled().count(key) && !Unsupported().count(key));
}

bool Trivial(const std::string& key, const Json& schema) {
  const Json& v = schema[key];
  // minContains / maxContains without contains do nothing.
  if (key == "minContains" || key == "maxContains") return !schema.contains("contains");
  if (key == "uniqueItems") return v == Json(false) || schema.value("maxItems", Json(2)) == 1;
  if (key == "dependentSchemas") {
    return v.is_object() && v.empty();
  }
  if (key == "multipleOf") {
    return v == Json(1) && schema.value("type", Json()) == Json("integer");
  }
  return false;
}

bool IntegralNumber(const Json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  return v.is_number_float() && std::isfinite(v.get<double>()) &&
         std::floor(v.get<double>()) == v.get<double>();
}

std::optional<int64_t> WholeDouble(const Json& v) {
  if (!v.is_number_float()) return std::nullopt;
  const double d = v.get<double>();
  if (!(std::fabs(d) <= 9007199254740992.0) || d != std::trunc(d)) return std::nullopt;
  return static_cast<int64_t>(d);
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

Status ResolveUnevaluated(Json* s) {
  if (s->contains("unevaluatedProperties")) {
    Json v = (*s)["unevaluatedProperties"];
    s->erase("unevaluatedProperties");
    if (!v.is_boolean() && !v.is_object()) {
      return InvalidArgument("'unevaluatedProperties' must be a schema");
    }
    if (!s->contains("additionalProperties")) (*s)["additionalProperties"] = std::move(v);
  }
  if (s->contains("unevaluatedItems")) {
    Json v = (*s)["unevaluatedItems"];
    s->erase("unevaluatedItems");
    if (!v.is_boolean() && !v.is_object()) {
      return InvalidArgument("'unevaluatedItems' must be a schema");
    }
    if (s->contains("contains")) {
      return InvalidArgument(
          "JSON Schema keyword 'unevaluatedItems' is not supported beside 'contains' (the items "
          "contains evaluates depend on the output)");
    }
    const bool tuple = s->contains("items") && (*s)["items"].is_array();  // draft 4-7
    const char* rest = tuple ? "additionalItems" : "items";
    if (!s->contains(rest)) (*s)[rest] = std::move(v);
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> TypeNames(const Json& type) {
  std::vector<std::string> names;
  if (type.is_string()) {
    names.push_back(type.get<std::string>());
    return names;
  }
  if (!type.is_array()) return InvalidArgument("'type' must be a string or an array");
  for (const Json& x : type) {
    if (!x.is_string()) return InvalidArgument("'type' entries must be strings");
    names.push_back(x.get<std::string>());
  }
  return names;
}

namespace {

// Whether `s` states its array elements in the 2020-12 form (prefixItems and/or a schema-valued
// items), not draft 4-7's array-valued items.
bool ModernItems(const Json& s) {
  return (s.contains("prefixItems") || s.contains("items")) &&
         !(s.contains("items") && s["items"].is_array());
}

// The schema side `s` gives element i: its prefixItems entry, else its items, else any.
Json ElementSchema(const Json& s, size_t i) {
  if (s.contains("prefixItems") && s["prefixItems"].is_array() && i < s["prefixItems"].size()) {
    return s["prefixItems"][i];
  }
  return s.value("items", Json(true));
}

// A positive integer (1e9 at most, so that a least common multiple stays exact).
bool IntegralPositive(const Json& v) {
  if (!v.is_number()) return false;
  const double d = v.get<double>();
  return d >= 1 && d <= 1e9 && d == static_cast<double>(static_cast<int64_t>(d));
}

Json BothOf(const Json& x, const Json& y) {
  if (x == Json(true) || x == y) return y;
  if (y == Json(true)) return x;
  return Json{{"allOf", Json::array({x, y})}};
}

// The element schemas of two sides, as one schema's: element i must meet both sides' schema
// for i (items of a side with fewer prefixItems apply to the other side's prefix too).
void MergeItems(const Json& a, const Json& b, Json* out) {
  const auto prefix_size = [](const Json& s) {
    return s.contains("prefixItems") && s["prefixItems"].is_array() ? s["prefixItems"].size()
                                                                    : size_t{0};
  };
  const size_t n = std::max(prefix_size(a), prefix_size(b));
  out->erase("prefixItems");
  out->erase("items");
  if (n > 0) {
    Json prefix = Json::array();
    for (size_t i = 0; i < n; ++i)
      prefix.push_back(BothOf(ElementSchema(a, i), ElementSchema(b, i)));
    (*out)["prefixItems"] = std::move(prefix);
  }
  const Json items = BothOf(a.value("items", Json(true)), b.value("items", Json(true)));
  // A stated `items: true` stays: it evaluates every item past the prefix, which an
  // unevaluatedItems beside the merged schema must see.
  if (items != Json(true) || a.contains("items") || b.contains("items")) (*out)["items"] = items;
}

}  // namespace

Json TypeIntersection(const Json& a, const Json& b) {
  const Json ta = a.is_array() ? a : Json::array({a});
  const Json tb = b.is_array() ? b : Json::array({b});
  Json both = Json::array();
  for (const Json& t : ta) {
    if (std::find(tb.begin(), tb.end(), t) != tb.end()) {
      both.push_back(t);
    } else if ((t == "number" && std::find(tb.begin(), tb.end(), "integer") != tb.end()) ||
               (t == "integer" && std::find(tb.begin(), tb.end(), "number") != tb.end())) {
      both.push_back("integer");  // number and integer intersect in integer
    }
  }
  return both;
}

bool TypesDisjoint(const Json& a, const Json& b) {
  return a.is_object() && b.is_object() && a.contains("type") && b.contains("type") &&
         TypeIntersection(a["type"], b["type"]).empty();
}

StatusOr<Json> MergeSchemas(const Json& a, const Json& b) {
  Json out = a;
  const bool merge_items = (ModernItems(a) || ModernItems(b)) &&
                           !(a.contains("items") && a["items"].is_array()) &&
                           !(b.contains("items") && b["items"].is_array());
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    if (merge_items && (k == "prefixItems" || k == "items")) continue;  // MergeItems below
    if (!out.contains(k)) {
      out[k] = it.value();
    } else if (k == "properties") {
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        // Both apply: true adds nothing, false forbids the property whatever the other says.
        Json& mine = out[k][p.key()];  // null when absent
        if (mine.is_null() || mine == Json(true) || p.value() == Json(false)) {
          mine = p.value();
        } else if (p.value() != Json(true) && mine != Json(false) && mine != p.value()) {
          mine = Json{{"allOf", Json::array({mine, p.value()})}};
        }
      }
    } else if (k == "required") {
      for (const Json& r : it.value()) {
        if (std::find(out[k].begin(), out[k].end(), r) == out[k].end()) out[k].push_back(r);
      }
    } else if (k == "type") {
      Json both = TypeIntersection(out[k], it.value());
      if (both.empty()) return InvalidArgument("allOf: the types do not intersect");
      out[k] = both;
    } else if (k == "minimum" || k == "minLength" || k == "minItems" || k == "exclusiveMinimum" ||
               k == "minProperties") {
      out[k] = std::max(out[k].get<double>(), it.value().get<double>());
    } else if (k == "maximum" || k == "maxLength" || k == "maxItems" || k == "exclusiveMaximum" ||
               k == "maxProperties") {
      out[k] = std::min(out[k].get<double>(), it.value().get<double>());
    } else if (k == "multipleOf" && IntegralPositive(out[k]) && IntegralPositive(it.value())) {
      // Multiples of both integers: multiples of their least common multiple.
      out[k] = std::lcm(out[k].get<int64_t>(), it.value().get<int64_t>());
    } else if (k == "dependentRequired" && out[k].is_object() && it.value().is_object()) {
      for (auto d = it.value().begin(); d != it.value().end(); ++d) {  // both apply: united
        Json& names = out[k][d.key()];
        if (names.is_null()) names = Json::array();
        if (!names.is_array() || !d.value().is_array()) {
          return InvalidArgument("'dependentRequired' values must be arrays");
        }
        for (const Json& name : d.value()) {
          if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
      }
    } else if (k == "uniqueItems" && out[k].is_boolean() && it.value().is_boolean()) {
      out[k] = out[k].get<bool>() || it.value().get<bool>();  // both apply
    } else if (k == "additionalProperties") {
      // Both apply: false wins, two schemas are both required of an extra property.
      if (out[k] == Json(false) || it.value() == Json(false)) {
        out[k] = false;
      } else if (out[k] != it.value()) {
        out[k] = Json{{"allOf", Json::array({out[k], it.value()})}};
      }
    } else if (IsAnnotation(k) || out[k] == it.value()) {
      continue;
    } else {
      return InvalidArgument("allOf: conflicting values of '" + k + "' cannot be merged");
    }
  }
  if (merge_items) MergeItems(a, b, &out);
  // One side's additionalProperties applies to every property the other side lists and it does
  // not: false keeps it out (its schema becomes false: an error later if it is required), a
  // schema is required of its value too. Beside that side's patternProperties a false one is
  // refused (a name a pattern matches would be allowed).
  for (const Json* side : {&a, &b}) {
    const Json extra = side->value("additionalProperties", Json(true));
    if (extra == Json(true) || !out.contains("properties")) continue;
    const bool has_props = side->contains("properties");
    const bool has_patterns =
        side->contains("patternProperties") && !(*side)["patternProperties"].empty();
    for (auto p = out["properties"].begin(); p != out["properties"].end(); ++p) {
      if (has_props && (*side)["properties"].contains(p.key())) continue;
      if (extra == Json(false)) {
        if (has_patterns) {
          return InvalidArgument(
              "allOf: additionalProperties false beside patternProperties "
              "excludes property '" +
              p.key() + "' unless a pattern matches it (not supported)");
        }
        p.value() = false;
        continue;
      }
      p.value() = Json{{"allOf", Json::array({p.value(), extra})}};
    }
  }
  return out;
}

}  // namespace deepinfer::structured
