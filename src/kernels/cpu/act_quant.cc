#include "kernels/cpu/act_quant.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {

void QuantizeActScaledBf16(const uint16_t* x, int64_t k, uint16_t* out) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    QuantizeActScaledBf16Avx512(x, k, out);
  } else {
    QuantizeActScaledBf16Ref(x, k, out);
  }
}

}  // namespace deepinfer::kernels
