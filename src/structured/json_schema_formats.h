// EBNF for the JSON Schema string formats we generate: date, time, date-time (RFC 3339),
// uuid, email, ipv4, uri. Each expression matches the string content between the quotes and is
// sound (every match is valid for the format) though not complete (e.g. no Feb 29, no quoted
// email local parts, years 1000-2999).
#pragma once

#include <string>

#include "core/status.h"

namespace deepinfer::structured {

// InvalidArgument naming the format when it is not one of the above.
StatusOr<std::string> FormatEbnf(const std::string& format);
// Whether JSON Schema (2020-12, section 7.3) defines `format` (date-time, hostname, ipv6, ...):
// those a validator with format checks on enforces, so one FormatEbnf lacks is refused; any
// other name is an annotation.
bool IsStandardFormat(const std::string& format);

}  // namespace deepinfer::structured
