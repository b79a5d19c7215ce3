// Engram (v41_model.md §3.9): adds a gated n-gram table lookup into the residual stream before
// the block it belongs to.
//   rows  = table[hash ids] dequantized to bf16 (e4m3 · ue8m0 per 32 columns; exact)
//   kv    = engram.wkv · concat(rows)            (FP8 GEMM) -> hc keys + one shared value
//   per copy c: dot = Σ_d x·(q_weight·k_weight)·key · rsqrt(mean x²+eps) · rsqrt(mean key²+eps)
//                     / √dim
//               gate = sigmoid(sign(dot) · √max(|dot|, 1e-6))
//               x_c = bf16(x_c + gate · value)   (fp32)
#pragma once

#include <cstdint>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

// x: stream [rows][hc][dim] bf16, updated in place. hash_ids: [rows][n_cols] table rows
// (offsets included) of this layer.
void ApplyEngram(const ModelConfig& c, const EngramWeights& w, const int64_t* hash_ids,
                 int64_t rows, uint16_t* x, ThreadPool& pool);

}  // namespace deepinfer::model
