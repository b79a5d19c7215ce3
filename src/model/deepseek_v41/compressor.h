// The compressor of a KV-source layer (v41_model.md §3.5): pools `ratio` consecutive tokens into
// one latent, derives the entry's index keys (when the layer has an indexer) and its compressed
// KV, and appends both to the layer's cache.
//
//   ratio 1: latent_t = RMSNorm(wkv·x_t)                     (bf16 GEMM)
//   ratio r: kv_t = wkv·x_t, z_t = wgate·x_t in fp32; tokens wait in the fp32 partial group
//            (slot = position % r) until the group completes; then per channel
//            latent = Σ_t softmax_t(z)[t]·kv_t (fp32), rounded to bf16, then RMSNorm.
//   index key  = FP4QDQ_pow2/32(RoPE(RMSNorm_k(wk·latent), pos = j·r))
//   compressed = FP4QDQ_e4m3/16(RoPE(latent, pos = j·r))
// Chunks of any size continue the partial group, so one-shot, chunked and token-by-token
// processing emit identical entries.
#pragma once

#include <cstdint>
#include <vector>

#include "model/deepseek_v41/batch_context.h"

namespace deepinfer::model {

// x: the attention input [rows][dim] (after attn_norm). Appends entries to every segment's cache
// of layer `li`.
void RunCompressor(const BatchContext& ctx, int li, const uint16_t* x);

}  // namespace deepinfer::model
