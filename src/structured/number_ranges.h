// EBNF for JSON numbers within bounds (JSON Schema minimum/maximum/exclusive*).
//
// Integers are exact: every integer in [lo, hi] and nothing else, written without leading zeros
// (the digit-range construction used for regexes of numeric ranges). Numbers are exact in
// decimal arithmetic: every decimal (no exponent, any number of fraction digits, "-0" allowed)
// between the bounds as written (their shortest round-trip decimal forms). An exclusive bound
// is first moved to the neighbouring double, so a decimal that a validator parsing doubles
// would round onto the bound is never produced; the only values left out are the decimals within
// half a unit in the last place of a bound that round onto it or its neighbour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::structured {

struct NumberBounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
};

// An EBNF expression for the integers within the bounds; InvalidArgument when there are none or
// a bound is beyond +-1e15.
StatusOr<std::string> IntegerRangeEbnf(const NumberBounds& bounds);
// An EBNF expression for the integers other than `excluded` (each within +-1e15; duplicates
// allowed), written as IntegerRangeEbnf writes them; InvalidArgument beyond the limit.
StatusOr<std::string> IntegersOtherThan(std::vector<int64_t> excluded);
// An EBNF expression for JSON numbers within the bounds (see above); InvalidArgument when there
// are none or a bound is beyond +-1e15.
StatusOr<std::string> NumberRangeEbnf(const NumberBounds& bounds);

}  // namespace deepinfer::structured
