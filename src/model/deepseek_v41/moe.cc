#include "model/deepseek_v41/moe.h"

#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cpu/topk.h"

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

  ScopedPhase phase("moe");
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

  // Activation quantized once for every expert that reads it.
  std::vector<uint16_t> xq(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::QuantizeActScaledBf16(x + r * dim, dim, xq.data() + r * dim);
  }
  std::vector<float> acc(rows * dim, 0.0f);
  std::vector<int64_t> members;
  std::vector<float> member_w;
  for (int64_t e = 0; e < n_exp; ++e) {
    members.clear();
    member_w.clear();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < top; ++k) {
        if (chosen[r * top + k] == e) {
          members.push_back(r);
          member_w.push_back(weight[r * top + k]);
        }
      }
    }
    if (members.empty()) continue;
    const int64_t m = static_cast<int64_t>(members.size());
    const ExpertWeights& ew = mw.experts[e];
    std::vector<uint16_t> gu(m * 2 * inter), h(m * inter), y(m * dim);
    if (ew.w1_mapped.weight) {
      // Mapped MXFP4: the reference kernel on the checkpoint layout.
      std::vector<uint16_t> xs(m * dim);
      for (int64_t i = 0; i < m; ++i)
        std::copy_n(xq.data() + members[i] * dim, dim, xs.data() + i * dim);
      kernels::Mxfp4GemmRef(ew.w1_mapped.weight, ew.w1_mapped.scale, inter, dim, xs.data(), m, dim,
                            gu.data(), DType::kBF16, 2 * inter);
      kernels::Mxfp4GemmRef(ew.w3_mapped.weight, ew.w3_mapped.scale, inter, dim, xs.data(), m, dim,
                            gu.data() + inter, DType::kBF16, 2 * inter);
      SwiGluRows(gu.data(), gu.data() + inter, 2 * inter, member_w.data(), m, inter, limit,
                 h.data());
      std::vector<uint16_t> hq(m * inter);
      for (int64_t i = 0; i < m; ++i) {
        kernels::QuantizeActScaledBf16(h.data() + i * inter, inter, hq.data() + i * inter);
      }
      kernels::Mxfp4GemmRef(ew.w2_mapped.weight, ew.w2_mapped.scale, dim, inter, hq.data(), m,
                            inter, y.data(), DType::kBF16, dim);
    } else if (ew.w13) {
      std::vector<uint16_t> xs(m * dim);
      for (int64_t i = 0; i < m; ++i)
        std::copy_n(xq.data() + members[i] * dim, dim, xs.data() + i * dim);
      kernels::Mxfp4Gemm(ew.w13->view(), xs.data(), m, dim, gu.data(), DType::kBF16, 2 * inter,
                         &pool);
      SwiGluRows(gu.data(), gu.data() + inter, 2 * inter, member_w.data(), m, inter, limit,
                 h.data());
      std::vector<uint16_t> hq(m * inter);
      for (int64_t i = 0; i < m; ++i) {
        kernels::QuantizeActScaledBf16(h.data() + i * inter, inter, hq.data() + i * inter);
      }
      kernels::Mxfp4Gemm(ew.w2->view(), hq.data(), m, inter, y.data(), DType::kBF16, dim, &pool);
    } else {
      std::vector<uint16_t> xs(m * dim);
      for (int64_t i = 0; i < m; ++i) std::copy_n(x + members[i] * dim, dim, xs.data() + i * dim);
      kernels::GemmBf16(ew.w1_bf16.bf16(), inter, dim, dim, xs.data(), m, dim, gu.data(),
                        DType::kBF16, 2 * inter, &pool);
      kernels::GemmBf16(ew.w3_bf16.bf16(), inter, dim, dim, xs.data(), m, dim, gu.data() + inter,
                        DType::kBF16, 2 * inter, &pool);
      SwiGluRows(gu.data(), gu.data() + inter, 2 * inter, member_w.data(), m, inter, limit,
                 h.data());
      kernels::GemmBf16(ew.w2_bf16.bf16(), dim, inter, inter, h.data(), m, inter, y.data(),
                        DType::kBF16, dim, &pool);
    }
    for (int64_t i = 0; i < m; ++i) {
      float* a = acc.data() + members[i] * dim;
      for (int64_t j = 0; j < dim; ++j) a[j] = a[j] + Bf16ToFloat(y[i * dim + j]);
    }
  }

  // Shared expert (dense FP8, no routing weight).
  std::vector<uint16_t> g(rows * inter), u(rows * inter), h(rows * inter), y(rows * dim);
  const uint16_t* xin = mw.shared.w1.quantized() ? xq.data() : x;  // bf16 weights take x as is
  mw.shared.w1.ApplyQuantized(xin, rows, dim, g.data(), inter, pool);
  mw.shared.w3.ApplyQuantized(xin, rows, dim, u.data(), inter, pool);
  SwiGluRows(g.data(), u.data(), inter, nullptr, rows, inter, limit, h.data());
  mw.shared.w2.Apply(h.data(), rows, inter, y.data(), dim, pool);
  for (int64_t i = 0; i < rows * dim; ++i) out[i] = FloatToBf16(acc[i] + Bf16ToFloat(y[i]));
}

}  // namespace deepinfer::model
