#include "kernels/cpu/hc_sinkhorn.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

float HcPre(float mix, float scale, float base, float eps) {
  const float z = mix * scale + base;
  return SigmoidF32(z) + eps;
}

float HcPost(float mix, float scale, float base) {
  const float z = mix * scale + base;
  return 2.0f * SigmoidF32(z);
}

void SinkhornNormalize(float* c, int hc, int iters, float eps) {
  CHECK(hc > 0 && hc <= 16 && iters >= 1) << "hc " << hc << " iters " << iters;
  auto row_sum = [&](int j) {
    float s = 0.0f;
    for (int k = 0; k < hc; ++k) s += c[j * hc + k];
    return s;
  };
  auto col_sum = [&](int k) {
    float s = 0.0f;
    for (int j = 0; j < hc; ++j) s += c[j * hc + k];
    return s;
  };
  auto normalize_cols = [&] {
    float d[16];
    for (int k = 0; k < hc; ++k) d[k] = col_sum(k) + eps;
    for (int j = 0; j < hc; ++j)
      for (int k = 0; k < hc; ++k) c[j * hc + k] = c[j * hc + k] / d[k];
  };
  // Row softmax, then + eps.
  for (int j = 0; j < hc; ++j) {
    float m = c[j * hc];
    for (int k = 1; k < hc; ++k) m = std::fmax(m, c[j * hc + k]);
    for (int k = 0; k < hc; ++k) c[j * hc + k] = ExpF32(c[j * hc + k] - m);
    const float s = row_sum(j);
    for (int k = 0; k < hc; ++k) c[j * hc + k] = c[j * hc + k] / s + eps;
  }
  normalize_cols();
  for (int it = 1; it < iters; ++it) {
    for (int j = 0; j < hc; ++j) {
      const float d = row_sum(j) + eps;
      for (int k = 0; k < hc; ++k) c[j * hc + k] = c[j * hc + k] / d;
    }
    normalize_cols();
  }
}

void HcSplitSinkhorn(const float* mixes, const float* scale, const float* base,
                     const HcMixParams& p, float* pre, float* post, float* comb) {
  const int hc = p.hc;
  for (int i = 0; i < hc; ++i) {
    pre[i] = HcPre(mixes[i], scale[0], base[i], p.eps);
    post[i] = HcPost(mixes[hc + i], scale[1], base[hc + i]);
  }
  for (int i = 0; i < hc * hc; ++i) comb[i] = mixes[2 * hc + i] * scale[2] + base[2 * hc + i];
  SinkhornNormalize(comb, hc, p.sinkhorn_iters, p.eps);
}

}  // namespace deepinfer::kernels
