// uniqueItems over a finite element domain (docs/structured_outputs.md "uniqueItems").
//
// A grammar cannot compare two arbitrary elements, but when every element an array may hold is
// one of a few known values (an enum, a const, boolean, null, a bounded integer range: what
// pydantic's Set[Literal[...]], Set[SomeEnum] and Set[bool] produce), an array of distinct elements
// is a walk over the subsets of those values: the state is the set written so far, each step
// writes a value not in it. The converter turns that walk into one rule per reachable subset.
//
// Contract: FiniteValues returns the values in the order the schema gives them (enum order; else
// per type in `type`'s order: false before true, integers ascending), without duplicates (JSON
// equality: 1 and 1.0 are one value), each satisfying the whole schema; nullopt when the schema is
// not of that form (any keyword beyond type / enum / const / numeric bounds, or a domain that is
// not finite or has more than kMaxUniqueDomain values).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "structured/json_schema_keywords.h"

namespace deepinfer::structured {

inline constexpr int64_t kMaxUniqueDomain = 64;
// The most subsets (grammar rules) one uniqueItems array may need.
inline constexpr int64_t kMaxUniqueStates = 4096;

// `schema`: an element schema with $ref and allOf inlined.
std::optional<std::vector<Json>> FiniteValues(const Json& schema);

// How many subsets of n values have at most k of them (saturates at kMaxUniqueStates + 1).
int64_t SubsetsUpTo(int64_t n, int64_t k);

}  // namespace deepinfer::structured
