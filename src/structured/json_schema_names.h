// Property names checked at compile time: the converter writes only listed (and required) names,
// so `patternProperties` and `propertyNames` are decided per name before any grammar is built.
#pragma once

#include <string>

#include "core/status.h"
#include "structured/json_schema_keywords.h"

namespace deepinfer::structured {

// Whether ECMAScript regex `pattern` finds a match in `name` (a JSON Schema pattern is a
// search). std::regex works on bytes, so only ASCII patterns and names are accepted
// (InvalidArgument otherwise, and for a pattern std::regex cannot read).
StatusOr<bool> PatternFinds(const std::string& pattern, const std::string& name);

// Whether `name` (a string) meets the string schema `s` (a propertyNames value): true / false,
// {}, type, const, enum, minLength, maxLength (in code points), pattern; annotations ignored.
// Any other assertion is InvalidArgument naming it.
StatusOr<bool> NameMeets(const Json& s, const std::string& name);

}  // namespace deepinfer::structured
