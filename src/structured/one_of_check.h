// JSON Schema `oneOf` exclusivity: a oneOf value must match exactly one branch, while the
// grammar generates the union of the branches. So the converter accepts a oneOf only when no
// value generated from one branch can validate against another; when that cannot be shown it
// is an explicit error ("unsupported: oneOf with overlapping branches"), never a silent anyOf.
//
// Decided cases, for every ordered pair (i generates, j must reject):
//   - the types i generates and the types j accepts do not meet (integer and number do: 1.0 is
//     an integer for the validators);
//   - i generates only const/enum values, each of a type j rejects or outside j's const/enum;
//   - both meet only in objects and i always writes a property p (required) whose generated
//     values j's schema for p rejects (recursively: a const discriminator), or that j forbids
//     (additionalProperties false), or j requires a property that i never writes (i writes no
//     extra pairs: additionalProperties false, or absent in strict mode, and no patternProperties).
// Anything else (numeric ranges, string patterns, arrays, nested anyOf) counts as overlapping.
#pragma once

#include <functional>
#include <vector>

#include "core/status.h"
#include "structured/json_schema_keywords.h"

namespace deepinfer::structured {

// Resolves $ref and allOf at the top of a schema (the converter's flattening).
using SchemaFlattener = std::function<StatusOr<Json>(const Json&)>;

// `branches`: the oneOf branches as the converter generates them (siblings merged in), already
// flattened; `strict`: JsonSchemaOptions::strict (an absent additionalProperties then generates
// no extra pairs). Ok when they exclude each other; InvalidArgument otherwise.
Status CheckOneOfExclusive(const std::vector<Json>& branches, const SchemaFlattener& flatten,
                           bool strict);

}  // namespace deepinfer::structured
