// Deterministic top-k over fp32 scores: the k = min(k, n) entries that come first in the total
// order (score descending, index ascending). Equal scores therefore go to the lower index, -0 and
// +0 count as equal, and -inf entries are ordinary (lowest) values: they are returned when fewer
// than k entries are finite, exactly as torch.topk would return them (the reference relies on
// that: a -inf-scored index below compress_len stays a valid attention index). NaN scores are not
// allowed (CHECK).
//
// Output order: rank order, i.e. (score desc, index asc). Callers that need position order (the
// indexer's `.sort()`) sort the returned indices themselves (SortIndicesAscending).
//
// Used for the index top-k (bf16-valued scores, frequent ties), candidate blocks and MoE routing.
// Cost O(n log k); no allocation after the first call on a thread (thread-local heap).
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

// Writes min(k, n) indices to out_idx (and their scores to out_score if non-null); returns the
// count.
int64_t TopK(const float* scores, int64_t n, int64_t k, int32_t* out_idx, float* out_score);

void SortIndicesAscending(int32_t* idx, int64_t n);

}  // namespace deepinfer::kernels
