// The complement of a simple JSON Schema as a positive schema, for `not` and `if`/`then`/`else`
// (the converter turns `if: I, then: T, else: E` into anyOf [I and T, (not I) and E], whose
// branches exclude each other).
#pragma once

#include <optional>

#include "structured/json_schema_keywords.h"

namespace deepinfer::structured {

// A schema that accepts exactly the values `s` rejects, as {"anyOf": [...]} of typed branches,
// for these forms of `s` (annotations aside):
//   {type: T}                       the other types (nullopt when integer is excluded but not
//                                   number: the non-integer numbers are no schema)
//   numeric bounds (type absent or number): the other types, and a number range per bound
//   minLength / maxLength (type absent or string): the other types, and the lengths outside
//   minItems / maxItems (type absent or array): the other types, and the counts outside
// nullopt for every other schema (the caller refuses it or builds its grammar directly).
std::optional<Json> NegatedSchema(const Json& s);

}  // namespace deepinfer::structured
