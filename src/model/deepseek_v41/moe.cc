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

  sub.emplace("moe.routed");  // quantization, gathers, expert GEMMs, SwiGLU
  // Activation quantized once for every expert that reads it.
  std::vector<uint16_t> xq(rows * dim);
  pool.ParallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      kernels::QuantizeActScaledBf16(x + r * dim, dim, xq.data() + r * dim);
    }
  });
  // Slots: every (row, chosen expert) pair, grouped by expert ascending (rows ascending within an
  // expert); slot_of[r * top + k] is where row r's k-th choice sits.
  std::vector<int64_t> slot_begin(n_exp + 1, 0), slot_row(rows * top), slot_of(rows * top);
  std::vector<float> slot_w(rows * top);
  for (int64_t i = 0; i < rows * top; ++i) ++slot_begin[chosen[i] + 1];
  for (int64_t e = 0; e < n_exp; ++e) slot_begin[e + 1] += slot_begin[e];
  {
    std::vector<int64_t> fill(slot_begin.begin(), slot_begin.end() - 1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < top; ++k) {
        const int64_t sl = fill[chosen[r * top + k]]++;
        slot_row[sl] = r;
        slot_w[sl] = weight[r * top + k];
        slot_of[r * top + k] = sl;
      }
    }
  }
  const int64_t n_slots = rows * top;
  std::vector<uint16_t> xs(n_slots * dim), gu(n_slots * 2 * inter), h(n_slots * inter),
      y(n_slots * dim);
  const bool packed = std::all_of(mw.experts.begin(), mw.experts.begin() + n_exp,
                                  [](const ExpertWeights& ew) { return ew.w13.has_value(); });
  pool.ParallelFor(n_slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) {
      const int64_t e =
          std::upper_bound(slot_begin.begin(), slot_begin.end(), sl) - slot_begin.begin() - 1;
      // MXFP4 experts read the quantized activation, bf16 experts x as is.
      const uint16_t* src = mw.experts[e].mxfp4() ? xq.data() : x;
      std::copy_n(src + slot_row[sl] * dim, dim, xs.data() + sl * dim);
    }
  });
  // gu rows [s0, s1) -> h rows (SwiGLU with the routing weight); quantized in place for MXFP4.
  auto swiglu = [&](int64_t s0, int64_t s1, bool quantize) {
    pool.ParallelFor(s1 - s0, 1, [&](int64_t a, int64_t b) {
      SwiGluRows(gu.data() + (s0 + a) * 2 * inter, gu.data() + (s0 + a) * 2 * inter + inter,
                 2 * inter, slot_w.data() + s0 + a, b - a, inter, limit,
                 h.data() + (s0 + a) * inter);
      if (quantize) {
        std::vector<uint16_t> tmp(inter);
        for (int64_t sl = s0 + a; sl < s0 + b; ++sl) {
          kernels::QuantizeActScaledBf16(h.data() + sl * inter, inter, tmp.data());
          std::copy_n(tmp.data(), inter, h.data() + sl * inter);
        }
      }
    });
  };
  if (packed) {
    // Packed MXFP4: all experts' w1|w3 in one call, then all w2 (one thread hand-off each at
    // decode instead of one per expert and matrix).
    std::vector<kernels::Mxfp4Job> jobs;
    for (int64_t e = 0; e < n_exp; ++e) {
      const int64_t s0 = slot_begin[e], m = slot_begin[e + 1] - s0;
      if (m == 0) continue;
      jobs.push_back({mw.experts[e].w13->view(), xs.data() + s0 * dim, m, dim,
                      gu.data() + s0 * 2 * inter, DType::kBF16, 2 * inter});
    }
    {
      ScopedPhase gemm("moe.routed.gemm");
      kernels::Mxfp4GemmMany(jobs, &pool);
    }
    swiglu(0, n_slots, /*quantize=*/true);
    jobs.clear();
    for (int64_t e = 0; e < n_exp; ++e) {
      const int64_t s0 = slot_begin[e], m = slot_begin[e + 1] - s0;
      if (m == 0) continue;
      jobs.push_back({mw.experts[e].w2->view(), h.data() + s0 * inter, m, inter,
                      y.data() + s0 * dim, DType::kBF16, dim});
    }
    ScopedPhase gemm("moe.routed.gemm");
    kernels::Mxfp4GemmMany(jobs, &pool);
  } else {
    for (int64_t e = 0; e < n_exp; ++e) {
      const int64_t s0 = slot_begin[e], m = slot_begin[e + 1] - s0;
      if (m == 0) continue;
      const ExpertWeights& ew = mw.experts[e];
      const uint16_t* xe = xs.data() + s0 * dim;
      uint16_t* ge = gu.data() + s0 * 2 * inter;
      uint16_t* he = h.data() + s0 * inter;
      uint16_t* ye = y.data() + s0 * dim;
      if (ew.w1_mapped.weight) {
        // Mapped MXFP4: the reference kernel on the checkpoint layout.
        kernels::Mxfp4GemmRef(ew.w1_mapped.weight, ew.w1_mapped.scale, inter, dim, xe, m, dim, ge,
                              DType::kBF16, 2 * inter);
        kernels::Mxfp4GemmRef(ew.w3_mapped.weight, ew.w3_mapped.scale, inter, dim, xe, m, dim,
                              ge + inter, DType::kBF16, 2 * inter);
        swiglu(s0, s0 + m, /*quantize=*/true);
        kernels::Mxfp4GemmRef(ew.w2_mapped.weight, ew.w2_mapped.scale, dim, inter, he, m, inter, ye,
                              DType::kBF16, dim);
      } else {
        kernels::GemmBf16(ew.w1_bf16.bf16(), inter, dim, dim, xe, m, dim, ge, DType::kBF16,
                          2 * inter, &pool);
        kernels::GemmBf16(ew.w3_bf16.bf16(), inter, dim, dim, xe, m, dim, ge + inter, DType::kBF16,
                          2 * inter, &pool);
        swiglu(s0, s0 + m, /*quantize=*/false);
        kernels::GemmBf16(ew.w2_bf16.bf16(), dim, inter, inter, he, m, inter, ye, DType::kBF16, dim,
                          &pool);
      }
    }
  }

  sub.emplace("moe.shared");
  // Shared expert (dense FP8, no routing weight).
  std::vector<uint16_t> g(rows * inter), u(rows * inter), hs(rows * inter), ys(rows * dim);
  const uint16_t* xin = mw.shared.w1.quantized() ? xq.data() : x;  // bf16 weights take x as is
  mw.shared.w1.ApplyQuantized(xin, rows, dim, g.data(), inter, pool);
  mw.shared.w3.ApplyQuantized(xin, rows, dim, u.data(), inter, pool);
  pool.ParallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    SwiGluRows(g.data() + r0 * inter, u.data() + r0 * inter, inter, nullptr, r1 - r0, inter, limit,
               hs.data() + r0 * inter);
  });
  mw.shared.w2.Apply(hs.data(), rows, inter, ys.data(), dim, pool);
  sub.emplace("moe.sum");
  // Per row: the routed outputs summed in ascending expert order from +0, then the shared one.
  pool.ParallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> order(top);
    std::vector<float> acc(dim);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < top; ++k) order[k] = slot_of[r * top + k];
      std::sort(order.begin(), order.end());  // slots are grouped by expert ascending
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t sl : order) {
        const uint16_t* ye = y.data() + sl * dim;
        for (int64_t j = 0; j < dim; ++j) acc[j] = acc[j] + Bf16ToFloat(ye[j]);
      }
      const uint16_t* yr = ys.data() + r * dim;
      for (int64_t j = 0; j < dim; ++j) out[r * dim + j] = FloatToBf16(acc[j] + Bf16ToFloat(yr[j]));
    }
  });
}

}  // namespace deepinfer::model
