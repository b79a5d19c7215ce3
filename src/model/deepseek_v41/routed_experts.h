// RunExpertPairs: the routed-expert products of one MoE layer for a list of (row, expert,
// weight) pairs (v41_model.md §3.8):
//   g = w1·a, u = w3·a (bf16 out), h = bf16(weight · silu(clamp g) · clamp u) (re-quantized to
//   scaled e4m3 for MXFP4 experts), y = w2·h (bf16).
// `a` is what the layer's experts read: the scaled-e4m3 activation (kernels/cpu/act_quant.h) for
// MXFP4 experts, the bf16 input for bf16 experts (ExpertInputIsQuantized).
//
// Contract: pairs are grouped by expert (ascending, stable) and each group runs as one GEMM of
// its rows; the kernels are row-independent, so a pair's result is the same bits whatever other
// pairs share the call, on any process. Every pair's expert must be held (ExpertWeights::held).
#pragma once

#include <cstdint>
#include <span>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/expert_exchange.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

// Whether layer `mw`'s experts read the quantized activation (MXFP4) or the plain one (bf16).
bool ExpertInputIsQuantized(const ModelConfig& c);

// act [n_act][dim], y [pairs][dim] in pair order.
void RunExpertPairs(const ModelConfig& c, const MoeWeights& mw, ThreadPool& pool,
                    const uint16_t* act, std::span<const ExpertPair> pairs, uint16_t* y);

}  // namespace deepinfer::model
