// The indexer of an index-source layer (v41_model.md §3.6): scores the compressed entries each
// row can see, applies the two-level candidate selection, and publishes the top-k entries.
//
//   q_I   = FP4QDQ_pow2/32(RoPE(indexer.wq_b · qr))            [rows][H_I][D_I]
//   w     = bf16(weights_proj · x) * D_I^-½ · H_I^-½           [rows][H_I]
//   score = Σ_h bf16(relu(q_I,h · k_t) · w_h)  over entries t < (pos+1)/ratio (bf16 values)
//   candidate source: block score = max over its entries; the row's newest block is pinned; the
//                     top candidate_topk_blocks finite blocks become a mask over entries;
//   candidate consumer: entries outside the source's mask score -inf;
//   top-k: min(index_topk, visible) entries by (score desc, entry asc), sorted ascending.
// Everything is computed per row over its visible entries only, which is exactly what the
// reference's causally masked full-width prefill selects (so prefill, chunks and decode agree).
// Keys: the layer's own KV source (owner mode) or the last published ones (official mode).
#pragma once

#include <cstdint>

#include "model/deepseek_v41/batch_context.h"

namespace deepinfer::model {

// x: attention input [rows][dim]; qr: q_norm(wq_a·x) [rows][q_lora]. Fills ctx->topk[li] and,
// for the candidate source, ctx->candidate_mask.
void RunIndexer(BatchContext* ctx, int li, const uint16_t* x, const uint16_t* qr);

}  // namespace deepinfer::model
