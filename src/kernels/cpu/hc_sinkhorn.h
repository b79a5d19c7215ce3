// Hyper-connection mix coefficients (the reference's hc_split_sinkhorn), fp32, one token at a
// time. mixes has (2 + hc) * hc entries: [0, hc) pre, [hc, 2hc) post, [2hc, ..) comb (hc x hc,
// row-major, comb[j][k] = element 2hc + j*hc + k). Exact op order:
//   pre[i]  = sigmoid(m[i] * scale[0] + base[i]) + eps
//   post[i] = 2 * sigmoid(m[hc+i] * scale[1] + base[hc+i])
//   c[j][k] = m[2hc + j*hc + k] * scale[2] + base[2hc + j*hc + k]
//   rows:    c[j][k] = exp(c[j][k] - max_k c[j][.]) ; c[j][k] = c[j][k] / rowsum_j + eps
//   columns: c[j][k] = c[j][k] / (colsum_k + eps)             (colsum over j)
//   repeat iters - 1 times: rows c /= (rowsum + eps); columns c /= (colsum + eps)
// Products and sums are separate fp32 roundings (no fma); sums run in ascending index order;
// exp and sigmoid are ExpF32 / SigmoidF32 (exp_f32.h). The consumer reads out_k = sum_j
// c[j][k]*x_j.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

struct HcMixParams {
  int hc = 4;
  int sinkhorn_iters = 20;
  float eps = 1e-6f;  // hc_eps
};

// mixes: [(2+hc)*hc]; scale: [3]; base: [(2+hc)*hc]; pre, post: [hc]; comb: [hc*hc].
void HcSplitSinkhorn(const float* mixes, const float* scale, const float* base,
                     const HcMixParams& p, float* pre, float* post, float* comb);

// The pieces, for callers and tests.
float HcPre(float mix, float scale, float base, float eps);  // sigmoid(mix*scale+base) + eps
float HcPost(float mix, float scale, float base);            // 2 * sigmoid(mix*scale+base)
// In-place Sinkhorn on c [hc*hc] (already scale/base-applied logits).
void SinkhornNormalize(float* c, int hc, int iters, float eps);

}  // namespace deepinfer::kernels
