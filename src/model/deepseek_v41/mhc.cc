#include "model/deepseek_v41/mhc.h"

#include <vector>

#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_f32.h"
#include "kernels/cpu/hc_sinkhorn.h"
#include "kernels/cpu/hc_stream.h"
#include "kernels/cpu/rmsnorm.h"

namespace deepinfer::model {

void HcMixes(const ModelConfig& c, const HcWeights& w, const uint16_t* x, int64_t rows, float* pre,
             float* post, float* comb, ThreadPool& pool) {
  const int hc = c.hc_mult;
  const int64_t width = static_cast<int64_t>(hc) * c.dim;
  const int64_t n_mix = static_cast<int64_t>(2 + hc) * hc;
  ScopedPhase phase("hc.mixes");
  // The fp32 product of the bf16 stream, widened in registers (no fp32 copy of the stream).
  std::vector<float> mixes(rows * n_mix);
  kernels::GemmF32(w.fn, DType::kF32, n_mix, width, width, x, rows, width, mixes.data(),
                   DType::kF32, n_mix, &pool);
  kernels::HcMixParams params;
  params.hc = hc;
  params.sinkhorn_iters = c.hc_sinkhorn_iters;
  params.eps = static_cast<float>(c.hc_eps);
  const float eps = static_cast<float>(c.norm_eps);
  // Per row: the norm over the stream, then sinkhorn_iters passes over the hc × hc mix.
  const int64_t row_work = width + n_mix * (c.hc_sinkhorn_iters + 1);
  pool.ParallelFor(rows, ThreadPool::GrainFor(row_work), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float rs = kernels::RmsNormFactor(x + r * width, width, eps);
      float* m = mixes.data() + r * n_mix;
      for (int64_t i = 0; i < n_mix; ++i) m[i] = m[i] * rs;
      kernels::HcSplitSinkhorn(m, w.scale, w.base, params, pre + r * hc, post + r * hc,
                               comb + r * hc * hc);
    }
  });
}

void HcCollapse(const ModelConfig& c, const uint16_t* x, const float* pre, int64_t rows,
                uint16_t* y, ThreadPool* pool) {
  ScopedPhase phase("hc.collapse");
  const int hc = c.hc_mult;
  const int64_t dim = c.dim;
  const kernels::HcStreamShape shape{hc, dim};
  auto run = [&](int64_t r0, int64_t r1) {
    kernels::HcCollapseRows(shape, x + r0 * hc * dim, pre + r0 * hc, r1 - r0, y + r0 * dim);
  };
  if (pool != nullptr && rows > 1) {
    pool->ParallelFor(rows, ThreadPool::GrainFor(hc * dim), run);
  } else {
    run(0, rows);
  }
}

void HcPost(const ModelConfig& c, const uint16_t* y, const uint16_t* x, const float* post,
            const float* comb, int64_t rows, uint16_t* out, ThreadPool& pool) {
  const int hc = c.hc_mult;
  const int64_t dim = c.dim;
  ScopedPhase phase("hc.post");
  const kernels::HcStreamShape shape{hc, dim};
  pool.ParallelFor(rows, ThreadPool::GrainFor(hc * hc * dim), [&](int64_t r0, int64_t r1) {
    kernels::HcPostRows(shape, y + r0 * dim, x + r0 * hc * dim, post + r0 * hc, comb + r0 * hc * hc,
                        r1 - r0, out + r0 * hc * dim);
  });
}

}  // namespace deepinfer::model
