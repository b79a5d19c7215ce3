// JSON text exactly as Python's `json.dumps(value, ensure_ascii=False)` writes it.
//
// The V4.1 prompt embeds tool schemas, response formats and non-string tool arguments through
// that call, so a byte-identical prompt needs its conventions: separators ", " and ": ", object
// keys in document order (hence nlohmann::ordered_json), non-ASCII characters written raw,
// control characters as \uXXXX with lowercase hex, floats as Python's repr() prints them
// ("1e-05", "1e+16", "2.0").
//
// Known difference: nlohmann stores an integer literal that does not fit 64 bits as a double, so
// it prints as a float here while Python would print the exact integer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace deepinfer::tokenizer {

// json.dumps(value, ensure_ascii=False). Recursive: callers bound the nesting depth of what they
// parse (see MaxJsonNesting).
std::string PyJsonDumps(const nlohmann::ordered_json& value);

// json.dumps(text, ensure_ascii=False) of a string: the quoted, escaped text.
std::string PyJsonQuote(std::string_view text);
void AppendPyJsonQuoted(std::string_view text, std::string* out);

// repr(float(x)).
std::string PyFloatRepr(double x);

// Python truthiness of the decoded value (null, false, 0, 0.0, "", [] and {} are false).
bool PyTruthy(const nlohmann::ordered_json& value);

// Deepest nesting of arrays/objects in JSON text (brackets inside strings do not count). Lets a
// caller refuse absurd nesting before a recursive walk; malformed text just gives some number.
int MaxJsonNesting(std::string_view json_text);

}  // namespace deepinfer::tokenizer
