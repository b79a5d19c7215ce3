// Scalar reference of the dense FP8 linear (numerics in fp8_gemm.h), straight from the unpacked
// checkpoint tensors. Slow; used by tests as the definition every optimized path must match bit
// for bit.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

// xq: [m][k] scaled activations (act_quant output). codes: [n][k] e4m3. scales:
// [ceil(n/32)][k/32] ue8m0. out: [m][n] fp32 (round with FloatToBf16 for the bf16 variant).
void Fp8GemmRefQuantized(const uint16_t* xq, int64_t m, int64_t k, const uint8_t* codes,
                         const uint8_t* scales, int64_t n, float* out);

// Same from raw bf16 x [m][k]: quantizes each row with QuantizeActScaledBf16Ref first.
void Fp8GemmRef(const uint16_t* x, int64_t m, int64_t k, const uint8_t* codes,
                const uint8_t* scales, int64_t n, float* out);

}  // namespace deepinfer::kernels
