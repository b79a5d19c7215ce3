// What a forward pass must move and compute, for benchmarks that report against physical limits
// (docs/performance.md): the weight bytes one decode token streams, and the arithmetic of a
// prefill.
#pragma once

#include <cstdint>

#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

// Bytes of weights one decode token of a batch-1 sequence reads, as the kernels store them
// (packed FP8 codes + scales, packed MXFP4, bf16/fp32 views): every backbone layer's attention,
// compressor, indexer, router, hc mixes and norms; n_activated routed experts + the shared expert;
// the Engram projection and its hashed table rows; the embedding row and the head. DSpark stages
// are not counted (they run only when drafting).
int64_t DecodeWeightBytesPerToken(const Model& model);

// Floating-point operations (2 per multiply-add) of a prefill of n tokens at position 0: every
// projection (n_activated experts per token), sparse attention over each row's window and
// selected compressed entries (q·k and p·v), the indexer's q·k scores over the visible entries,
// and the head for the last row.
double PrefillFlops(const Model& model, int64_t n_tokens);

}  // namespace deepinfer::model
