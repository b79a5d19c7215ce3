// Row softmax in fp32, max-subtracted: m = max_i x_i; e_i = ExpF32(x_i - m);
// s = sum_i e_i (ascending i, fp32); y_i = e_i / s.
// -inf entries get exactly 0. A row whose entries are all -inf has no defined softmax (torch
// gives NaN); here it yields all zeros, so a fully masked row contributes nothing.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

// x, y: [n_rows][stride] fp32, n used per row; y may alias x.
void SoftmaxRows(const float* x, int64_t x_stride, float* y, int64_t y_stride, int64_t n_rows,
                 int64_t n);

}  // namespace deepinfer::kernels
