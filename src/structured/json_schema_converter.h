// JSON Schema -> EBNF (docs/structured_outputs.md lists what is supported).
//
// Output style: compact JSON; after `,` and `:` one optional space, nowhere else whitespace, so
// a constrained generation cannot wander in layout. Object properties come in the order of
// `properties`; properties not listed are generated only when the schema allows them through
// `additionalProperties` (true or a schema), as xgrammar does; their keys never equal a listed
// name and use no escapes. Unsupported keywords and forms (uniqueItems, patternProperties, a
// non-integer multipleOf, a `not` or `if` whose complement is not built, ...) are
// InvalidArgument naming the keyword; annotations (title,
// description, default, examples, $schema, $id, $comment, ...) are ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "structured/char_class.h"

namespace deepinfer::structured {

// `schema` is JSON text. The grammar's start rule is `root`.
StatusOr<std::string> JsonSchemaToEbnf(std::string_view schema);

// Any JSON object (compact style), start rule `root`.
std::string JsonObjectEbnf();

// Composition: grammars that embed JSON values (the DSML tool-call grammar).
struct JsonSchemaOptions {
  // Characters never written raw inside JSON strings: string content, keys and pattern classes
  // leave them out, and literals (enum, const, property names) are written with \u escapes
  // (every non-ASCII character then is). BMP characters only. The DSML tool-call grammar
  // excludes U+FF5C so that no argument can spell a DSML tag.
  CharClass string_excluded;
};
struct SchemaRules {
  std::vector<std::string> roots;  // one EBNF expression per requested schema
  std::string rules;               // the rules they use (names start with the prefix)
};
// Converts the schemas at `schemas` (JSON pointers into `document`, against which $refs
// resolve) into rules named prefix + ...; add JsonBaseRules(options) once to the grammar.
StatusOr<SchemaRules> JsonSchemaRules(
    const nlohmann::ordered_json& document,
    const std::vector<nlohmann::ordered_json::json_pointer>& schemas, const std::string& prefix,
    const JsonSchemaOptions& options);
// The shared rules (comma, colon, json_value, json_string, ...) the converted rules use.
std::string JsonBaseRules(const JsonSchemaOptions& options);

}  // namespace deepinfer::structured
