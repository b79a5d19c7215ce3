// Scalar reference of the hyper-connection stream passes and the dispatch (hc_stream.h).
#include "kernels/cpu/hc_stream.h"

#include "core/bf16.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {

void HcCollapseRowsRef(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                       uint16_t* y) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const float* p = pre + r * hc;
    for (int64_t d = 0; d < dim; ++d) {
      float acc = p[0] * Bf16ToFloat(xr[d]);
      for (int k = 1; k < hc; ++k) acc = acc + p[k] * Bf16ToFloat(xr[k * dim + d]);
      y[r * dim + d] = FloatToBf16(acc);
    }
  }
}

void HcPostRowsRef(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                   const float* comb, int64_t rows, uint16_t* out) {
  const int hc = s.hc;
  const int64_t dim = s.dim;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * hc * dim;
    const float* cm = comb + r * hc * hc;
    for (int k = 0; k < hc; ++k) {
      const float pk = post[r * hc + k];
      uint16_t* o = out + (r * hc + k) * dim;
      for (int64_t d = 0; d < dim; ++d) {
        float acc = cm[k] * Bf16ToFloat(xr[d]);
        for (int j = 1; j < hc; ++j) acc = acc + cm[j * hc + k] * Bf16ToFloat(xr[j * dim + d]);
        o[d] = FloatToBf16(pk * Bf16ToFloat(y[r * dim + d]) + acc);
      }
    }
  }
}

void HcCollapseRows(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                    uint16_t* y) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    HcCollapseRowsAvx512(s, x, pre, rows, y);
  } else if (ActiveCpuLevel() == CpuLevel::kAvx2) {
    HcCollapseRowsAvx2(s, x, pre, rows, y);
  } else {
    HcCollapseRowsRef(s, x, pre, rows, y);
  }
}

void HcPostRows(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                const float* comb, int64_t rows, uint16_t* out) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    HcPostRowsAvx512(s, y, x, post, comb, rows, out);
  } else if (ActiveCpuLevel() == CpuLevel::kAvx2) {
    HcPostRowsAvx2(s, y, x, post, comb, rows, out);
  } else {
    HcPostRowsRef(s, y, x, post, comb, rows, out);
  }
}

}  // namespace deepinfer::kernels
