#include "model/deepseek_v41/moe.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cpu/topk.h"
#include "model/deepseek_v41/routed_experts.h"

namespace deepinfer::model {
namespace {

float Score(float logit, ScoreFunc f) {
  switch (f) {
    case ScoreFunc::kSqrtSoftplus: {
      // torch softplus (beta 1, threshold 20).
      const float sp = logit > 20.0f ? logit : std::log1p(std::exp(logit));
      return std::sqrt(sp);
    }
    case ScoreFunc::kSigmoid:
      return 1.0f / (1.0f + std::exp(-logit));
    case ScoreFunc::kSoftmax:
      break;
  }
  return logit;  // softmax is applied over the row by the caller
}

// SwiGLU (with clamps and optional routing weights) of gate/up rows -> h [rows][inter] bf16.
void SwiGluRows(const uint16_t* gate, const uint16_t* up, int64_t stride, const float* weight,
                int64_t rows, int64_t inter, float limit, uint16_t* h) {
  kernels::SwiGluParams p;
  p.gate = gate;
  p.up = up;
  p.gate_stride = stride;
  p.up_stride = stride;
  p.row_weight = weight;
  p.out = h;
  p.out_stride = inter;
  p.n_rows = rows;
  p.n = inter;
  p.limit = limit;
  kernels::SwiGlu(p);
}

}  // namespace

void RunMoe(const BatchContext& ctx, int li, const uint16_t* x, uint16_t* out) {
  const ModelConfig& c = ctx.cfg();
  const LayerDescriptor& d = ctx.layer(li);
  const MoeWeights& mw = ctx.weights->layers[li].moe;
  ThreadPool& pool = *ctx.pool;
  const int64_t rows = ctx.n_rows, dim = c.dim, inter = c.moe_inter_dim;
  const int64_t n_exp = d.n_routed_experts, top = d.n_activated_experts;
  const float limit = static_cast<float>(c.swiglu_limit);

  ScopedPhase phase("moe");  // the whole MoE; the phases below nest in it
  std::optional<ScopedPhase> sub(std::in_place, "moe.router");
  // Router, fp32.
  // x.float() · gate.float()ᵀ: bf16 products are exact in fp32, so a bf16 GEMM with fp32
  // output computes the same sums.
  std::vector<float> logits(rows * n_exp);
  kernels::GemmBf16(mw.gate.bf16(), n_exp, dim, dim, x, rows, dim, logits.data(), DType::kF32,
                    n_exp, &pool);
  std::vector<int32_t> chosen(rows * top);
  std::vector<float> weight(rows * top);
  std::vector<float> biased(n_exp);
  const float temp = static_cast<float>(c.gate_temp);
  for (int64_t r = 0; r < rows; ++r) {
    float* s = logits.data() + r * n_exp;
    for (int64_t e = 0; e < n_exp; ++e) s[e] = Score(s[e] / temp, c.score_func);
    if (c.score_func == ScoreFunc::kSoftmax) {
      float m = s[0];
      for (int64_t e = 1; e < n_exp; ++e) m = std::max(m, s[e]);
      float sum = 0.0f;
      for (int64_t e = 0; e < n_exp; ++e) sum += (s[e] = std::exp(s[e] - m));
      for (int64_t e = 0; e < n_exp; ++e) s[e] /= sum;
    }
    for (int64_t e = 0; e < n_exp; ++e) biased[e] = s[e] + mw.gate_bias[e];
    int32_t* sel = chosen.data() + r * top;
    kernels::TopK(biased.data(), n_exp, top, sel, nullptr);
    float* w = weight.data() + r * top;
    float sum = 0.0f;
    for (int64_t k = 0; k < top; ++k) {
      w[k] = s[sel[k]];
      sum += w[k];
    }
    const float denom = sum + 1e-20f;
    for (int64_t k = 0; k < top; ++k) {
      if (c.norm_topk_prob && top > 1) w[k] = w[k] / denom;
      w[k] = w[k] * static_cast<float>(c.route_scale);
    }
  }

  sub.emplace("moe.routed");  // quantization, the exchange or the local experts
  // Activation quantized once for every expert that reads it.
  std::vector<uint16_t> xq(rows * dim);
  pool.ParallelFor(rows, ThreadPool::GrainFor(2 * dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      kernels::QuantizeActScaledBf16(x + r * dim, dim, xq.data() + r * dim);
    }
  });
  // Pair r * top + k: row r's k-th choice.
  std::vector<ExpertPair> pairs(rows * top);
  for (int64_t i = 0; i < rows * top; ++i) {
    pairs[i] = {static_cast<int32_t>(i / top), chosen[i], weight[i]};
  }
  const uint16_t* act = ExpertInputIsQuantized(c) ? xq.data() : x;
  std::vector<uint16_t> y(rows * top * dim);
  if (ctx.experts != nullptr) {
    ctx.experts->RunRouted(li, act, rows, pairs, y.data());
  } else {
    RunExpertPairs(c, mw, pool, act, pairs, y.data());
  }

  sub.emplace("moe.shared");
  // Shared expert (dense FP8, no routing weight).
  std::vector<uint16_t> g(rows * inter), u(rows * inter), hs(rows * inter), ys(rows * dim);
  const uint16_t* xin = mw.shared.w1.quantized() ? xq.data() : x;  // bf16 weights take x as is
  mw.shared.w1.ApplyQuantized(xin, rows, dim, g.data(), inter, pool);
  mw.shared.w3.ApplyQuantized(xin, rows, dim, u.data(), inter, pool);
  pool.ParallelFor(rows, ThreadPool::GrainFor(4 * inter), [&](int64_t r0, int64_t r1) {
    SwiGluRows(g.data() + r0 * inter, u.data() + r0 * inter, inter, nullptr, r1 - r0, inter, limit,
               hs.data() + r0 * inter);
  });
  mw.shared.w2.Apply(hs.data(), rows, inter, ys.data(), dim, pool);
  sub.emplace("moe.sum");
  // Per row: the routed outputs summed in ascending expert order from +0, then the shared one.
  pool.ParallelFor(rows, ThreadPool::GrainFor((top + 1) * dim), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> order(top);
    std::vector<float> acc(dim);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < top; ++k) order[k] = r * top + k;
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return chosen[a] < chosen[b]; });
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t i : order) {
        const uint16_t* ye = y.data() + i * dim;
        for (int64_t j = 0; j < dim; ++j) acc[j] = acc[j] + Bf16ToFloat(ye[j]);
      }
      const uint16_t* yr = ys.data() + r * dim;
      for (int64_t j = 0; j < dim; ++j) out[r * dim + j] = FloatToBf16(acc[j] + Bf16ToFloat(yr[j]));
    }
  });
}

}  // namespace deepinfer::model
