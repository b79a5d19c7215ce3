// EBNF for a forced tool call in the DeepSeek-V4.1 DSML format (OpenAI tool_choice "required" or
// a named function; Anthropic tool_choice "any" / "tool").
//
// The grammar covers the assistant output from its first byte (after </think> in thinking mode:
// the engine's grammar_start_token) to EOS, and is exactly the block the V4.1 renderer writes
// and tokenizer/chat/dsml_calls.h parses, with empty content before it:
//
//   "\n\n<｜DSML｜ calls>\n" CALL ("\n" CALL)* "\n</｜DSML｜ calls>"
//   CALL  ::= "<｜DSML｜ invoke name=\"NAME\">\n" (PARAM ("\n" PARAM)*)? "\n</｜DSML｜ invoke>"
//   PARAM ::= "<｜DSML｜ parameter name=\"KEY\" string=\"true\">" RAW "</｜DSML｜ parameter>"
//           | "<｜DSML｜ parameter name=\"KEY\" string=\"false\">" JSON "</｜DSML｜ parameter>"
//
// The parser rebuilds the arguments as {"KEY": json.dumps(RAW) | JSON, ...}, so:
//   - parameters follow `properties` order; required ones are always written, optional ones may
//     be left out; names in `required` without a `properties` entry take any JSON value; no
//     other parameters are written (whatever additionalProperties says);
//   - a parameter whose schema only admits strings (type "string", or a const/enum of strings)
//     is written raw with string="true": its minLength/maxLength (in characters), pattern (on
//     the raw text), format, enum and const apply to the raw text;
//   - any other parameter (numbers, objects, arrays, unions that include strings) is written
//     as JSON with string="false", following the JSON Schema grammar (structured/json_schema_*);
//   - no argument ever contains U+FF5C (the DSML tag bar): raw text leaves it out and JSON writes
//     it as \uff5c, so no value can end its own tag early.
// The top level of `parameters` must be an object schema: type, properties, required,
// additionalProperties, $defs/definitions and annotations. Anything else (anyOf, $ref, allOf at
// the top, unsupported keywords anywhere) is InvalidArgument, as is a tool or parameter name
// containing `"` or U+FF5C.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace deepinfer::structured {

// functions: OpenAI function objects [{"name", "description"?, "parameters"?}, ...].
// forced_name empty: calls of any of the functions ("required"), one or more when `parallel`,
// else exactly one; otherwise exactly one call of that function. Start rule `root`.
StatusOr<std::string> DsmlToolCallsEbnf(const nlohmann::ordered_json& functions,
                                        const std::string& forced_name, bool parallel = true);

}  // namespace deepinfer::structured
