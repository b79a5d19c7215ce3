#include "model/deepseek_v41/block.h"

#include <algorithm>
#include <vector>

#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/rmsnorm.h"
#include "model/deepseek_v41/mhc.h"
#include "model/deepseek_v41/moe.h"

namespace deepinfer::model {
namespace {

// RmsNormInPlace with the rows split over the pool (each row's result is independent of it).
void NormRows(const uint16_t* weight, uint16_t* x, int64_t rows, int64_t dim, double eps,
              ThreadPool& pool) {
  pool.ParallelFor(rows, 16, [&](int64_t r0, int64_t r1) {
    kernels::RmsNormInPlace(weight, x + r0 * dim, r1 - r0, dim, eps);
  });
}

}  // namespace

void RunBlock(const BatchContext& ctx, int li, const AttentionFn& attention, uint16_t* x,
              float* pre) {
  const ModelConfig& c = ctx.cfg();
  const LayerWeights& w = ctx.weights->layers[li];
  const int64_t rows = ctx.n_rows, dim = c.dim, hc = c.hc_mult;
  std::vector<float> a_pre(rows * hc), a_post(rows * hc), a_comb(rows * hc * hc);
  std::vector<float> f_post(rows * hc), f_comb(rows * hc * hc);
  std::vector<uint16_t> in(rows * dim), y(rows * dim), x1(rows * hc * dim);

  {
    ScopedPhase phase("hc");
    HcMixes(c, w.hc_attn, x, rows, a_pre.data(), a_post.data(), a_comb.data(), *ctx.pool);
    HcCollapse(c, x, pre, rows, in.data(), ctx.pool);
    NormRows(w.attn_norm, in.data(), rows, dim, c.norm_eps, *ctx.pool);
  }
  attention(in.data(), y.data());
  {
    ScopedPhase phase("hc");
    HcPost(c, y.data(), x, a_post.data(), a_comb.data(), rows, x1.data(), *ctx.pool);
    HcMixes(c, w.hc_ffn, x1.data(), rows, pre, f_post.data(), f_comb.data(), *ctx.pool);
    HcCollapse(c, x1.data(), a_pre.data(), rows, in.data(), ctx.pool);
    NormRows(w.ffn_norm, in.data(), rows, dim, c.norm_eps, *ctx.pool);
  }
  RunMoe(ctx, li, in.data(), y.data());
  ScopedPhase phase("hc");
  HcPost(c, y.data(), x1.data(), f_post.data(), f_comb.data(), rows, x, *ctx.pool);
}

}  // namespace deepinfer::model
