#include "structured/one_of_check.h"

#include <optional>
#include <string>

namespace deepinfer::structured {
namespace {

// JSON value kinds as the validators see them; a number with an integral value is an integer.
enum : unsigned {
  kNull = 1,
  kBoolean = 2,
  kInteger = 4,
  kFraction = 8,  // a number that is not an integer
  kString = 16,
  kArray = 32,
  kObject = 64,
  kAll = 127,
};

constexpr int kMaxDepth = 16;

unsigned KindOfType(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBoolean;
  if (t == "integer") return kInteger;
  if (t == "number") return kInteger | kFraction;
  if (t == "string") return kString;
  if (t == "array") return kArray;
  if (t == "object") return kObject;
  return 0;
}

unsigned KindOfValue(const Json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return d == static_cast<double>(static_cast<int64_t>(d)) ? kInteger : kFraction;
  }
  return KindOfType(JsonTypeOf(v));
}

// The kinds `type` (and `nullable`) allow; kAll without a type.
unsigned DeclaredKinds(const Json& s) {
  if (!s.is_object() || !s.contains("type")) return kAll;
  unsigned k = 0;
  const Json& t = s["type"];
  if (t.is_string()) k = KindOfType(t.get<std::string>());
  if (t.is_array()) {
    for (const Json& x : t) k |= x.is_string() ? KindOfType(x.get<std::string>()) : 0;
  }
  if (s.value("nullable", false)) k |= kNull;
  return k;
}

// The finite set of values a schema allows (const or enum, filtered by type), if it has one.
std::optional<std::vector<Json>> FiniteValues(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<Json>{s["const"]};
  if (!s.contains("enum") || !s["enum"].is_array()) return std::nullopt;
  const unsigned declared = DeclaredKinds(s);
  std::vector<Json> out;
  for (const Json& v : s["enum"]) {
    if (KindOfValue(v) & declared) out.push_back(v);
  }
  return out;
}

class Checker {
 public:
  Checker(const SchemaFlattener& flatten, bool strict) : flatten_(flatten), strict_(strict) {}

  // Whether no value generated from `gen` validates against `acc` (both flattened).
  StatusOr<bool> Disjoint(const Json& gen, const Json& acc, int depth) {
    if (depth > kMaxDepth) return false;
    DI_ASSIGN_OR_RETURN(unsigned gk, Kinds(gen, /*generated=*/true, depth));
    DI_ASSIGN_OR_RETURN(unsigned ak, Kinds(acc, /*generated=*/false, depth));
    const unsigned common = gk & ak;
    if (common == 0) return true;
    if (auto values = FiniteValues(gen)) {
      const auto accepted = FiniteValues(acc);
      bool all_rejected = true;
      for (const Json& v : *values) {
        const bool kind_ok = (KindOfValue(v) & ak) != 0;
        const bool in_acc =
            !accepted || std::find(accepted->begin(), accepted->end(), v) != accepted->end();
        if (kind_ok && in_acc) all_rejected = false;
      }
      if (all_rejected) return true;
    }
    if (common != kObject || !gen.is_object() || !acc.is_object()) return false;
    return ObjectsDisjoint(gen, acc, depth);
  }

 private:
  // Kinds a schema generates (generated) or accepts.
  StatusOr<unsigned> Kinds(const Json& s, bool generated, int depth) {
    if (s.is_boolean()) return s.get<bool>() ? kAll : 0u;
    if (!s.is_object()) return kAll;
    unsigned k = DeclaredKinds(s);
    if (auto values = FiniteValues(s)) {
      unsigned v = 0;
      for (const Json& x : *values) v |= KindOfValue(x);
      k &= v;
    } else if (generated && !s.contains("type")) {
      k = InferredKinds(s);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key) || !s[key].is_array()) continue;
      unsigned u = 0;
      for (const Json& b : s[key]) {
        DI_ASSIGN_OR_RETURN(Json flat, flatten_(b));
        DI_ASSIGN_OR_RETURN(unsigned bk, Kinds(flat, generated, depth + 1));
        u |= bk;
      }
      k &= u;
    }
    return k;
  }

  // What the converter generates for a schema without a type (its InferTypes).
  static unsigned InferredKinds(const Json& s) {
    unsigned k = 0;
    auto any = [&](std::initializer_list<const char*> keys) {
      for (const char* key : keys) {
        if (s.contains(key)) return true;
      }
      return false;
    };
    if (any({"properties", "required", "additionalProperties"})) k |= kObject;
    if (any({"items", "prefixItems", "minItems", "maxItems"})) k |= kArray;
    if (any({"minLength", "maxLength", "pattern", "format"})) k |= kString;
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      k |= kInteger | kFraction;
    }
    return k == 0 ? kAll : k;
  }

  static bool Has(const Json& s, const char* key, const std::string& name) {
    return s.contains(key) && s[key].is_object() && s[key].contains(name);
  }
  static bool Requires(const Json& s, const std::string& name) {
    if (!s.contains("required") || !s["required"].is_array()) return false;
    for (const Json& r : s["required"]) {
      if (r == name) return true;
    }
    return false;
  }

  static std::vector<std::string> Required(const Json& s) {
    std::vector<std::string> out;
    if (!s.contains("required") || !s["required"].is_array()) return out;
    for (const Json& r : s["required"]) {
      if (r.is_string()) out.push_back(r.get<std::string>());
    }
    return out;
  }

  // Some property decides: for a name that i always writes or j requires, every value i can
  // write there is rejected by j (or i never writes a name j requires, or always writes one j
  // forbids). A listed name is never written as an additional property, so its values come
  // from its own schema only.
  StatusOr<bool> ObjectsDisjoint(const Json& gen, const Json& acc, int depth) {
    // Extra pairs: where additionalProperties allows them (absent: unless strict), and keys
    // matching a patternProperties pattern.
    const bool gen_extras =
        gen.value("additionalProperties", Json(!strict_)) != Json(false) ||
        (gen.contains("patternProperties") && !gen["patternProperties"].empty());
    const bool acc_closed = acc.value("additionalProperties", Json(true)) == Json(false);
    std::vector<std::string> names = Required(gen);
    for (const std::string& n : Required(acc)) names.push_back(n);
    for (const std::string& name : names) {
      const bool always = Requires(gen, name);
      const bool listed = Has(gen, "properties", name);
      if (Requires(acc, name) && !listed && !always && !gen_extras) return true;
      if (!Has(acc, "properties", name)) {
        if (always && acc_closed) return true;
        continue;
      }
      if (!listed && !always) continue;  // an extra pair may carry any value
      DI_ASSIGN_OR_RETURN(Json g, flatten_(listed ? gen["properties"][name] : Json::object()));
      DI_ASSIGN_OR_RETURN(Json a, flatten_(acc["properties"][name]));
      DI_ASSIGN_OR_RETURN(bool d, Disjoint(g, a, depth + 1));
      if (d) return true;
    }
    return false;
  }

  const SchemaFlattener& flatten_;
  bool strict_;
};

}  // namespace

Status CheckOneOfExclusive(const std::vector<Json>& branches, const SchemaFlattener& flatten,
                           bool strict) {
  Checker checker(flatten, strict);
  for (size_t i = 0; i < branches.size(); ++i) {
    for (size_t j = 0; j < branches.size(); ++j) {
      if (i == j) continue;
      DI_ASSIGN_OR_RETURN(bool disjoint, checker.Disjoint(branches[i], branches[j], 0));
      if (!disjoint) {
        return InvalidArgument("unsupported: oneOf with overlapping branches (a value of branch " +
                               std::to_string(i) + " may also match branch " + std::to_string(j) +
                               "; make them exclusive, e.g. with a const property, or use anyOf)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace deepinfer::structured
