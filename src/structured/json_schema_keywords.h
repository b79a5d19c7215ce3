// JSON Schema keyword facts the converter and its checks share: which keywords are annotations
// or handled, the JSON type of a value, and the allOf merge of two schemas.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::structured {

using Json = nlohmann::ordered_json;  // keeps the schema's property order

// Keywords that never constrain (title, description, $defs, ...).
const std::set<std::string>& Annotations();
// Keywords the converter implements.
const std::set<std::string>& Handled();
// Assertion keywords the converter does not implement (patternProperties, not, uniqueItems, ...):
// a schema that uses them is refused, since ignoring them would let output through that does not
// validate. Trivial uses (uniqueItems false, an empty patternProperties, ...) are Trivial below.
const std::set<std::string>& Unsupported();
// Whether `key` never constrains: a known annotation, or a keyword JSON Schema does not define
// (the specification treats unknown keywords as annotations: `self`, `example`, `readonly`, ...).
bool IsAnnotation(const std::string& key);
// Whether an Unsupported keyword's value constrains nothing in `schema` (uniqueItems false,
// an empty patternProperties / dependentRequired / dependentSchemas / dependencies, multipleOf 1
// on integers, minContains / maxContains without contains, ...).
bool Trivial(const std::string& key, const Json& schema);
// "null", "boolean", "integer", "number", "string", "array" or "object".
std::string JsonTypeOf(const Json& v);

// Whether `v` is a number JSON Schema counts as an integer (1 and 1.0 are; 1.5 is not).
bool IntegralNumber(const Json& v);
// The value of a whole number held as a double (1.0, -2.0) within +-2^53, where every integer is
// exact; nullopt for any other value (integers held as integers included).
std::optional<int64_t> WholeDouble(const Json& v);
// The names a `type` value gives (one name, or an array of names); InvalidArgument otherwise.
StatusOr<std::vector<std::string>> TypeNames(const Json& type);
// The types two `type` values (a name or an array of names) share (integer where one says
// number and the other integer); empty when none.
Json TypeIntersection(const Json& a, const Json& b);
// Whether schemas `a` and `b` both state a type and no type is in both (their allOf is empty).
bool TypesDisjoint(const Json& a, const Json& b);
// unevaluatedProperties / unevaluatedItems of a schema whose $ref and allOf are already merged into
// it (and whose anyOf / oneOf branch, if any, too): every property or item the generated output
// can hold is then one the schema's own keywords evaluate, so the keyword is the
// additionalProperties (items after prefixItems) the schema does not state, and nothing beside
// one it states. Rewrites `s` so; InvalidArgument where that is not so (unevaluatedItems beside
// contains).
Status ResolveUnevaluated(Json* s);
// allOf-style merge of two schemas (both without allOf/anyOf/oneOf/$ref): properties and
// required united, types intersected, bounds tightened; conflicting values are InvalidArgument.
StatusOr<Json> MergeSchemas(const Json& a, const Json& b);

}  // namespace deepinfer::structured
