// EPLB planning for one MoE layer (docs/scaleout.md "EPLB"): our own implementation of the two
// steps DeepSeek's eplb.py describes for its global policy (V4.1 has no expert groups).
//   1. Replicate: `redundant` extra copies go one at a time to the expert with the highest load
//      per copy (the lowest index on a tie), at most one copy per rank.
//   2. Pack: copies, heaviest (load / copies) first, go to the rank with the least load so far
//      that has a free slot and no copy of that expert yet (the lowest rank on a tie); every rank
//      has ceil((experts + redundant) / ranks) slots.
// A pure function of its inputs: every rank computes the same plan from the same loads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace deepinfer::dist {

// Holders (ascending ranks) of each expert of a layer whose routed rows were loads[e].
StatusOr<std::vector<std::vector<int>>> PlanExpertLayer(std::span<const int64_t> loads, int n_ranks,
                                                        int redundant);

// (max - mean) / mean of the rows each rank runs when expert e's loads[e] rows split evenly over
// its holders; 0 for no load.
double PlacementImbalance(std::span<const int64_t> loads,
                          const std::vector<std::vector<int>>& holders, int n_ranks);

// (max - mean) / mean of per-rank rows; 0 when all are 0.
double Imbalance(std::span<const double> per_rank);

}  // namespace deepinfer::dist
