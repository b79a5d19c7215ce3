// TopPThreshold: the top_p boundary of a set of unnormalized probabilities without sorting it.
#pragma once

#include <cstdint>

namespace deepinfer::engine {

// Returns the largest value t among vals[0, n) such that the sum of the vals >= t is >= target
// (so keeping every value >= t keeps at least `target` mass, ties at t included); when even the
// whole set falls short (rounding), the smallest value. O(n): a radix select on the float bit
// pattern (11 + 11 + 10 bits) with double-precision bucket masses; each level rescans only the
// boundary bucket. Deterministic: it depends only on the values and their order. Overwrites
// vals; scratch needs room for n floats.
// Preconditions (CHECKed): n >= 1, target > 0, every value finite and >= 0.
float TopPThreshold(float* vals, int64_t n, double target, float* scratch);

}  // namespace deepinfer::engine
