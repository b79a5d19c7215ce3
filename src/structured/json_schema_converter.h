// JSON Schema -> EBNF (docs/structured_outputs.md lists what is supported).
//
// Output style: compact JSON; after `,` and `:` one optional space, nowhere else whitespace, so
// a constrained generation cannot wander in layout. Strict (JsonSchemaOptions::strict, the
// default): object properties come in the order of `properties`, and properties not listed are
// generated only when the schema allows them through `additionalProperties` (true or a schema)
// or match the one pattern of `patternProperties`, as xgrammar does. Not strict: an absent
// `additionalProperties` allows any other key, and objects of up to 6 properties take them in
// any order, and numbers equal in value are one value (`1.0` is an integer; `const: 1` accepts
// `1.0`). Extra keys never equal a listed name and use no escapes. Unsupported keywords and
// forms (uniqueItems over unbounded items, a `not` or `if` whose complement is not built, ...)
// are InvalidArgument naming the keyword; annotations (title, description, default, examples,
// $schema, $id, $comment, ...) are ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "structured/char_class.h"

namespace deepinfer::structured {

struct JsonSchemaOptions {
  // Characters never written raw inside JSON strings: string content, keys and pattern classes
  // leave them out, and literals (enum, const, property names) are written with \u escapes
  // (every non-ASCII character then is). BMP characters only. The DSML tool-call grammar
  // excludes U+FF5C so that no argument can spell a DSML tag.
  CharClass string_excluded;
  // Strict (the default, as xgrammar's strict mode that vLLM and SGLang use): one shape a typed
  // consumer parses: an object that lists properties gets no other keys unless
  // additionalProperties allows them, keys in schema order, integers without a fraction, const /
  // enum values as written. Not strict, as the JSON Schema specification reads: an absent
  // additionalProperties allows any other key, small objects take their keys in any order, and
  // every spelling of an equal number (1.0 for 1) is accepted.
  bool strict = true;
};

// `schema` is JSON text. The grammar's start rule is `root`.
StatusOr<std::string> JsonSchemaToEbnf(std::string_view schema,
                                       const JsonSchemaOptions& options = {});

// Any JSON object (compact style), start rule `root`.
std::string JsonObjectEbnf();

// Composition: grammars that embed JSON values (the DSML tool-call grammar).
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
