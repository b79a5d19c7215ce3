#include "model/deepseek_v41/routed_experts.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/swiglu.h"

namespace deepinfer::model {

bool ExpertInputIsQuantized(const ModelConfig& c) { return c.expert_dtype == WeightFormat::kFp4; }

void RunExpertPairs(const ModelConfig& c, const MoeWeights& mw, ThreadPool& pool,
                    const uint16_t* act, std::span<const ExpertPair> pairs, uint16_t* y) {
  const int64_t dim = c.dim, inter = c.moe_inter_dim;
  const auto n_exp = static_cast<int64_t>(mw.experts.size());
  const auto n_slots = static_cast<int64_t>(pairs.size());
  if (n_slots == 0) return;
  const float limit = static_cast<float>(c.swiglu_limit);
  // Slots: the pairs grouped by expert ascending (pair order within an expert); pair i sits in
  // slot slot_of[i].
  std::vector<int64_t> slot_begin(n_exp + 1, 0), slot_pair(n_slots);
  std::vector<float> slot_w(n_slots);
  for (const ExpertPair& p : pairs) {
    CHECK(p.expert >= 0 && p.expert < n_exp && mw.experts[p.expert].held())
        << "routed expert " << p.expert << " is not held here";
    ++slot_begin[p.expert + 1];
  }
  for (int64_t e = 0; e < n_exp; ++e) slot_begin[e + 1] += slot_begin[e];
  {
    std::vector<int64_t> fill(slot_begin.begin(), slot_begin.end() - 1);
    for (int64_t i = 0; i < n_slots; ++i) {
      const int64_t sl = fill[pairs[i].expert]++;
      slot_pair[sl] = i;
      slot_w[sl] = pairs[i].weight;
    }
  }
  std::vector<uint16_t> xs(n_slots * dim), gu(n_slots * 2 * inter), h(n_slots * inter),
      ys(n_slots * dim);
  pool.ParallelFor(n_slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) {
      std::copy_n(act + static_cast<int64_t>(pairs[slot_pair[sl]].act) * dim, dim,
                  xs.data() + sl * dim);
    }
  });
  // gu rows [s0, s1) -> h rows (SwiGLU with the routing weight); quantized in place for MXFP4.
  auto swiglu = [&](int64_t s0, int64_t s1, bool quantize) {
    pool.ParallelFor(s1 - s0, 1, [&](int64_t a, int64_t b) {
      kernels::SwiGluParams p;
      p.gate = gu.data() + (s0 + a) * 2 * inter;
      p.up = p.gate + inter;
      p.gate_stride = 2 * inter;
      p.up_stride = 2 * inter;
      p.row_weight = slot_w.data() + s0 + a;
      p.out = h.data() + (s0 + a) * inter;
      p.out_stride = inter;
      p.n_rows = b - a;
      p.n = inter;
      p.limit = limit;
      kernels::SwiGlu(p);
      if (quantize) {
        std::vector<uint16_t> tmp(inter);
        for (int64_t sl = s0 + a; sl < s0 + b; ++sl) {
          kernels::QuantizeActScaledBf16(h.data() + sl * inter, inter, tmp.data());
          std::copy_n(tmp.data(), inter, h.data() + sl * inter);
        }
      }
    });
  };
  const bool packed =
      std::all_of(mw.experts.begin(), mw.experts.end(),
                  [](const ExpertWeights& ew) { return !ew.held() || ew.w13.has_value(); });
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
                      ys.data() + s0 * dim, DType::kBF16, dim});
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
      uint16_t* ye = ys.data() + s0 * dim;
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
  pool.ParallelFor(n_slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) {
      std::copy_n(ys.data() + sl * dim, dim, y + slot_pair[sl] * dim);
    }
  });
}

}  // namespace deepinfer::model
