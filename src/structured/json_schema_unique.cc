#include "structured/json_schema_unique.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

namespace deepinfer::structured {
namespace {

// Whether `v` is of one of `types` (JSON Schema's: an integral number is an integer too).
bool OfSchemaType(const Json& v, const std::vector<std::string>& types) {
  if (types.empty()) return true;
  for (const std::string& t : types) {
    if (t == "integer" ? IntegralNumber(v) : t == "number" ? v.is_number() : JsonTypeOf(v) == t) {
      return true;
    }
  }
  return false;
}

bool WithinNumericBounds(const Json& v, const Json& s) {
  if (!v.is_number()) return true;  // bounds say nothing of other types
  const double x = v.get<double>();
  if (s.contains("minimum") && !(x >= s["minimum"].get<double>())) return false;
  if (s.contains("maximum") && !(x <= s["maximum"].get<double>())) return false;
  if (s.contains("exclusiveMinimum") && !(x > s["exclusiveMinimum"].get<double>())) return false;
  if (s.contains("exclusiveMaximum") && !(x < s["exclusiveMaximum"].get<double>())) return false;
  return true;
}

}  // namespace

std::optional<std::vector<Json>> FiniteValues(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  static const std::set<std::string> kAllowed = {
      "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!IsAnnotation(it.key()) && !kAllowed.count(it.key())) return std::nullopt;
  }
  for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (s.contains(bound) && !s[bound].is_number()) return std::nullopt;
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    StatusOr<std::vector<std::string>> names = TypeNames(s["type"]);
    if (!names.ok()) return std::nullopt;
    types = std::move(*names);
  }
  std::vector<Json> candidates;
  if (s.contains("const")) {
    candidates.push_back(s["const"]);
  } else if (s.contains("enum")) {
    if (!s["enum"].is_array()) return std::nullopt;
    candidates.assign(s["enum"].begin(), s["enum"].end());
  } else {
    if (types.empty()) return std::nullopt;
    for (const std::string& t : types) {
      if (t == "boolean") {
        candidates.push_back(false);
        candidates.push_back(true);
      } else if (t == "null") {
        candidates.push_back(nullptr);
      } else if (t == "integer") {
        const bool lo_set = s.contains("minimum") || s.contains("exclusiveMinimum");
        const bool hi_set = s.contains("maximum") || s.contains("exclusiveMaximum");
        if (!lo_set || !hi_set) return std::nullopt;
        double lo = -INFINITY, hi = INFINITY;
        if (s.contains("minimum")) lo = std::max(lo, std::ceil(s["minimum"].get<double>()));
        if (s.contains("exclusiveMinimum")) {
          lo = std::max(lo, std::floor(s["exclusiveMinimum"].get<double>()) + 1);
        }
        if (s.contains("maximum")) hi = std::min(hi, std::floor(s["maximum"].get<double>()));
        if (s.contains("exclusiveMaximum")) {
          hi = std::min(hi, std::ceil(s["exclusiveMaximum"].get<double>()) - 1);
        }
        if (hi - lo + 1 > static_cast<double>(kMaxUniqueDomain)) return std::nullopt;
        for (double x = lo; x <= hi; x += 1) candidates.emplace_back(static_cast<int64_t>(x));
      } else {
        return std::nullopt;  // number, string, array, object: not a finite domain
      }
    }
  }
  std::vector<Json> values;
  for (const Json& v : candidates) {
    if (!OfSchemaType(v, types) || !WithinNumericBounds(v, s)) continue;
    if (s.contains("const") && !(v == s["const"])) continue;
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) {
      continue;
    }
    if (std::find(values.begin(), values.end(), v) != values.end()) continue;
    values.push_back(v);
  }
  if (static_cast<int64_t>(values.size()) > kMaxUniqueDomain) return std::nullopt;
  return values;
}

int64_t SubsetsUpTo(int64_t n, int64_t k) {
  int64_t total = 0;
  int64_t choose = 1;  // C(n, i)
  for (int64_t i = 0; i <= std::min(n, k); ++i) {
    total += choose;
    if (total > kMaxUniqueStates) return kMaxUniqueStates + 1;
    choose = choose * (n - i) / (i + 1);
    if (choose > kMaxUniqueStates) choose = kMaxUniqueStates + 1;
  }
  return total;
}

}  // namespace deepinfer::structured
