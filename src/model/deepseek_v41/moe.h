// The MoE feed-forward of a block (v41_model.md §3.8):
//   scores = sqrt(softplus(x.float() · gateᵀ / gate_temp))       fp32
//   chosen = top-k of scores + bias (ties to the lower expert)    the bias only selects
//   w      = scores[chosen] / (Σ + 1e-20) · route_scale
//   expert e: g = w1·x, u = w3·x (FP8-quantized x, bf16 out), clamps, h = bf16(w·silu(g)·u),
//             y_e = w2·h (bf16)
//   y = bf16(Σ_e y_e (fp32, experts in ascending index) + shared(x))
// The routing and the sum run here; the (row, expert) products run in ctx.experts when set (an
// expert-parallel exchange, expert_exchange.h), else here (routed_experts.h).
#pragma once

#include <cstdint>

#include "model/deepseek_v41/batch_context.h"

namespace deepinfer::model {

// x: ffn input [rows][dim] (after ffn_norm); out: [rows][dim] bf16.
void RunMoe(const BatchContext& ctx, int li, const uint16_t* x, uint16_t* out);

}  // namespace deepinfer::model
