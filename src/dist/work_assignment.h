// Attention data parallelism's placement of requests on the ranks of an instance: by tokens of
// work (prompt tokens plus the most output tokens the request may produce, times its samples),
// greedily in input order: each request goes to the rank with the least work assigned so far,
// the lowest rank on a tie. A pure function of (work, ranks), so every rank computes the same
// placement from the same input without a message.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer::dist {

// The rank of each request (entries in [0, n_ranks)); n_ranks >= 1.
std::vector<int> AssignByWork(std::span<const int64_t> work, int n_ranks);

}  // namespace deepinfer::dist
