// JSON Lines filters for the `deepinfer` commands that read records on stdin and answer on
// stdout: exactly one output line per input line, in order. A line that is not a JSON object, or
// that the handler refuses, gives {"error": "..."} on its line and the next line is read.
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace deepinfer::tools {

using JsonLineHandler =
    std::function<StatusOr<nlohmann::ordered_json>(const nlohmann::ordered_json&)>;

// Input objects keep their key order (nlohmann::ordered_json); nesting deeper than 256 is refused.
void RunJsonLines(std::istream& in, std::ostream& out, const JsonLineHandler& handler);

// One output line (no newline): UTF-8 kept raw except U+0080–U+009F, U+2028, U+2029 and U+FEFF,
// which are written as \uXXXX so that no line splitter breaks the record (the fixtures' rule).
std::string JsonLine(const nlohmann::ordered_json& value);

}  // namespace deepinfer::tools
