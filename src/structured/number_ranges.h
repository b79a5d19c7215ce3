// EBNF for JSON numbers within bounds (JSON Schema minimum/maximum/exclusive*).
//
// Integers are exact: every integer in [lo, hi] and nothing else, written without leading zeros
// (the digit-range construction used for regexes of numeric ranges). Non-integer numbers are
// sound but not complete: an integer part I with a fraction is produced only when the whole unit
// interval [I, I+1) (or (-(I+1), -I] for negatives) lies within the bounds, so a fractional value
// within one unit of a non-integer bound cannot be generated. Bounded numbers use no exponent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace deepinfer::structured {

struct NumberBounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
};

// An EBNF expression for the integers within the bounds; InvalidArgument when there are none or
// a bound is beyond +-1e15.
StatusOr<std::string> IntegerRangeEbnf(const NumberBounds& bounds);
// An EBNF expression for JSON numbers within the bounds (see above).
StatusOr<std::string> NumberRangeEbnf(const NumberBounds& bounds);

}  // namespace deepinfer::structured
