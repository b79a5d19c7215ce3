#include "kernels/cpu/act_quant.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {

void QuantizeActScaledBf16(const uint16_t* x, int64_t k, uint16_t* out) {
  switch (ActiveCpuLevel()) {
    case CpuLevel::kAvx512:
      QuantizeActScaledBf16Avx512(x, k, out);
      break;
    case CpuLevel::kAvx2:
      QuantizeActScaledBf16Avx2(x, k, out);
      break;
    case CpuLevel::kScalar:
      QuantizeActScaledBf16Ref(x, k, out);
      break;
  }
}

}  // namespace deepinfer::kernels
