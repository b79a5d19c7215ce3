// Hyper-connections (mHC) of a block, over rows of the residual stream X [rows][hc][dim] bf16
// (v41_model.md §3.3; fixture README "Hyper-connections").
//
//   HcMixes:  one RMS statistic over all hc copies, mixes = (x · fnᵀ) * rsqrt(mean(x²) + eps)
//             in fp32, then pre / post / Sinkhorn comb (kernels/cpu/hc_sinkhorn.h).
//   Collapse: y = bf16(Σ_c pre[c] · X[c])                    (fp32 products, c ascending)
//   HcPost:   out_k = bf16(post_k · y + Σ_j comb[j][k] · X_j)  (fp32, j ascending)
#pragma once

#include <cstdint>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

// pre, post: [rows][hc]; comb: [rows][hc][hc] (comb[j][k], summed over j by the consumer).
void HcMixes(const ModelConfig& c, const HcWeights& w, const uint16_t* x, int64_t rows, float* pre,
             float* post, float* comb, ThreadPool& pool);

// y [rows][dim] = Σ_c pre[row][c] · x[row][c] (rounded to bf16). pool: rows split over it
// (nullptr: this thread); every row's result is the same either way.
void HcCollapse(const ModelConfig& c, const uint16_t* x, const float* pre, int64_t rows,
                uint16_t* y, ThreadPool* pool = nullptr);

// out [rows][hc][dim]; must not alias x.
void HcPost(const ModelConfig& c, const uint16_t* y, const uint16_t* x, const float* post,
            const float* comb, int64_t rows, uint16_t* out, ThreadPool& pool);

}  // namespace deepinfer::model
