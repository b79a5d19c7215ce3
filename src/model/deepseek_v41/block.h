// One block with hyper-connections (v41_model.md §3.3, the "delayed pre" form):
//   a_pre, a_post, a_comb = HcMixes(X, hc_attn)
//   X = HcPost(Attention(RMSNorm_attn(Collapse(X, pre_in))), X, a_post, a_comb)
//   f_pre, f_post, f_comb = HcMixes(X, hc_ffn)
//   X = HcPost(MoE(RMSNorm_ffn(Collapse(X, a_pre))), X, f_post, f_comb)
//   pre_out = f_pre
// The attention is passed in, so backbone blocks and DSpark stages share this code.
#pragma once

#include <cstdint>
#include <functional>

#include "model/deepseek_v41/batch_context.h"

namespace deepinfer::model {

// attention(x_normed [rows][dim], out [rows][dim]).
using AttentionFn = std::function<void(const uint16_t* x, uint16_t* out)>;

// x: stream [rows][hc][dim] (updated in place); pre: [rows][hc] (in: this block's attention
// pre-mix, out: the pre-mix handed to the next block).
void RunBlock(const BatchContext& ctx, int li, const AttentionFn& attention, uint16_t* x,
              float* pre);

}  // namespace deepinfer::model
