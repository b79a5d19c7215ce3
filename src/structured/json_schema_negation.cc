#include "structured/json_schema_negation.h"

#include <algorithm>
#include <string>
#include <vector>

namespace deepinfer::structured {
namespace {

const std::vector<std::string>& AllTypes() {
  static const std::vector<std::string> k = {"object", "array",   "string",
                                             "number", "boolean", "null"};
  return k;
}

// {"type": [every type but `t`]}.
Json OtherTypes(const std::string& t) {
  Json types = Json::array();
  for (const std::string& x : AllTypes()) {
    if (x != t) types.push_back(x);
  }
  return Json{{"type", types}};
}

// The keywords of `s` that constrain, all among `allowed`, and `type` absent or `own`.
bool OnlyKeywords(const Json& s, const std::vector<std::string>& allowed, const char* own) {
  bool any = false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (IsAnnotation(k)) continue;
    if (k == "type") {
      if (it.value() != Json(own)) return false;
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) return false;
    any = true;
  }
  return any;
}

std::optional<Json> NegatedType(const Json& t) {
  StatusOr<std::vector<std::string>> names = TypeNames(t);
  if (!names.ok()) return std::nullopt;
  const std::vector<std::string>& excluded = *names;
  const auto out = [&](const std::string& x) {
    return std::find(excluded.begin(), excluded.end(), x) != excluded.end();
  };
  if (out("integer") && !out("number")) return std::nullopt;
  Json types = Json::array();
  for (const std::string& x : AllTypes()) {
    if (!out(x)) types.push_back(x);
  }
  if (types.empty()) return std::nullopt;
  return Json{{"anyOf", Json::array({Json{{"type", types}}})}};
}

}  // namespace

std::optional<Json> NegatedSchema(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  bool only_type = s.contains("type");
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it.key() != "type" && !IsAnnotation(it.key())) only_type = false;
  }
  if (only_type) return NegatedType(s["type"]);

  Json branches = Json::array();
  // One branch per bound a value can break: {bound keyword: (the opposite keyword, the type)}.
  struct Flip {
    const char* keyword;
    const char* opposite;
    int shift;  // for counts: the opposite bound is value + shift
  };
  const auto negate = [&](const char* type, const std::vector<Flip>& flips) -> std::optional<Json> {
    std::vector<std::string> names(flips.size());
    std::transform(flips.begin(), flips.end(), names.begin(),
                   [](const Flip& f) { return std::string(f.keyword); });
    if (!OnlyKeywords(s, names, type)) return std::nullopt;
    branches.push_back(OtherTypes(type));
    for (const Flip& f : flips) {
      if (!s.contains(f.keyword)) continue;
      const Json& v = s[f.keyword];
      if (!v.is_number()) return std::nullopt;  // draft-4 boolean exclusive* among them
      Json b = {{"type", type}};
      if (f.shift == 0) {
        b[f.opposite] = v;
      } else {
        const double d = v.get<double>();
        if (d != static_cast<double>(static_cast<int64_t>(d))) return std::nullopt;
        const int64_t n = static_cast<int64_t>(d) + f.shift;
        if (n < 0) continue;  // nothing is shorter than 0
        b[f.opposite] = n;
      }
      branches.push_back(std::move(b));
    }
    return Json{{"anyOf", branches}};
  };
  if (auto n = negate("number", {{"minimum", "exclusiveMaximum", 0},
                                 {"exclusiveMinimum", "maximum", 0},
                                 {"maximum", "exclusiveMinimum", 0},
                                 {"exclusiveMaximum", "minimum", 0}})) {
    return n;
  }
  branches = Json::array();
  if (auto n = negate("string", {{"minLength", "maxLength", -1}, {"maxLength", "minLength", 1}})) {
    return n;
  }
  branches = Json::array();
  return negate("array", {{"minItems", "maxItems", -1}, {"maxItems", "minItems", 1}});
}

}  // namespace deepinfer::structured
