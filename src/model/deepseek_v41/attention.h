// Attention of one block (v41_model.md §3.4): low-rank q with q_norm, one shared K=V latent with
// kv_norm, RoPE on the trailing rope_head_dim lanes, FP8 QDQ of the window KV, the window ring,
// compressed KV selected by the indexer (ratio > 0), sparse attention with a per-head sink,
// inverse RoPE on the output, grouped wo_a, then wo_b.
//
// Each row attends to the window positions max(0, pos-window+1) .. pos (from the ring and from
// the rows of its own segment) followed by its selected compressed entries, both in ascending
// position order, so one-shot prefill, chunks, verify rows and decode see identical lists.
#pragma once

#include <cstdint>

#include "model/deepseek_v41/batch_context.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer::model {

// x: attention input [rows][dim] (after attn_norm); out: [rows][dim] bf16. Updates the caches of
// every segment (ring, compressed KV, index keys) for layer `li`.
void RunAttention(BatchContext* ctx, int li, const uint16_t* x, uint16_t* out);

// u [rows][groups*lora] = block-diagonal wo_a · o [rows][groups*gin] (bf16 out).
void GroupedOutLora(const AttentionWeights& aw, const uint16_t* o, int64_t rows, int64_t groups,
                    int64_t gin, int64_t lora, uint16_t* u, ThreadPool& pool);

}  // namespace deepinfer::model
