// JSON Schema -> EBNF (docs/structured_outputs.md lists what is supported).
//
// Output style: compact JSON; after `,` and `:` one optional space, nowhere else whitespace, so
// a constrained generation cannot wander in layout. Object properties come in the order of
// `properties`; properties not listed are generated only when the schema allows them through
// `additionalProperties` (true or a schema), as xgrammar does; their keys never equal a listed
// name and use no escapes. Unsupported keywords (uniqueItems, multipleOf, patternProperties,
// if/then/else, not, ...) are InvalidArgument naming the keyword; annotations (title,
// description, default, examples, $schema, $id, $comment, ...) are ignored.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace deepinfer::structured {

// `schema` is JSON text. The grammar's start rule is `root`.
StatusOr<std::string> JsonSchemaToEbnf(std::string_view schema);

// Any JSON object (compact style), start rule `root`.
std::string JsonObjectEbnf();

}  // namespace deepinfer::structured
