#include "kernels/cpu/rmsnorm.h"

#include <cmath>

#include "core/bf16.h"
#include "core/check.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {

float RmsNormFactorRef(const uint16_t* x, int64_t dim, float eps) {
  float lanes[64] = {};
  for (int64_t i = 0; i < dim; ++i) {
    const float v = Bf16ToFloat(x[i]);
    lanes[i % 64] += v * v;
  }
  for (int w = 32; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  const float mean = lanes[0] / static_cast<float>(dim);
  return 1.0f / std::sqrt(mean + eps);
}

float RmsNormFactor(const uint16_t* x, int64_t dim, float eps) {
  switch (ActiveCpuLevel()) {
    case CpuLevel::kAvx512:
      return RmsNormFactorAvx512(x, dim, eps);
    case CpuLevel::kAvx2:
      return RmsNormFactorAvx2(x, dim, eps);
    default:
      return RmsNormFactorRef(x, dim, eps);
  }
}

void RmsNormRef(const RmsNormParams& p) {
  CHECK(p.dim > 0) << "RmsNorm: dim must be positive";
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const uint16_t* x = p.x + r * p.x_stride;
    uint16_t* y = p.y + r * p.y_stride;
    const float f = RmsNormFactorRef(x, p.dim, p.eps);
    for (int64_t i = 0; i < p.dim; ++i) {
      y[i] = FloatToBf16(Bf16ToFloat(p.weight[i]) * (Bf16ToFloat(x[i]) * f));
    }
  }
}

void RmsNorm(const RmsNormParams& p) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    RmsNormAvx512(p);
  } else if (ActiveCpuLevel() == CpuLevel::kAvx2) {
    RmsNormAvx2(p);
  } else {
    RmsNormRef(p);
  }
}

void RmsNormInPlace(const uint16_t* weight, uint16_t* rows, int64_t n_rows, int64_t dim,
                    double eps) {
  RmsNormParams p;
  p.x = rows;
  p.x_stride = dim;
  p.weight = weight;
  p.y = rows;
  p.y_stride = dim;
  p.n_rows = n_rows;
  p.dim = dim;
  p.eps = static_cast<float>(eps);
  RmsNorm(p);
}

}  // namespace deepinfer::kernels
