#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

void SoftmaxRows(const float* x, int64_t x_stride, float* y, int64_t y_stride, int64_t n_rows,
                 int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::fmax(m, xr[i]);
    if (m == -std::numeric_limits<float>::infinity()) {
      for (int64_t i = 0; i < n; ++i) yr[i] = 0.0f;
      continue;
    }
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      yr[i] = ExpF32(xr[i] - m);
      s += yr[i];
    }
    for (int64_t i = 0; i < n; ++i) yr[i] = yr[i] / s;
  }
}

}  // namespace deepinfer::kernels
