// Activation quantization before every FP8/FP4 GEMM (the reference's `act_quant`).
//
// Per 32 consecutive elements of a bf16 row: amax, then a power-of-two scale
//   s = 2^ceil(log2(max(amax, 1e-4) * (1/448)))     (fp32 multiply by the constant 1/448)
// and codes q = e4m3_rne(clamp(x / s, -448, 448)). The division is exact (s is a power of two).
//
// Kernels never need the e4m3 bytes themselves: q·s is exactly representable in bf16, so the
// GEMMs take "scaled activations" xq[i] = bf16(q[i]·s[i/32]) and fold only the weight scale in
// their per-block epilogue. Both forms are provided; they are bit-for-bit the same numbers.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

inline constexpr int kActQuantBlock = 32;

// x: k bf16 values (k % 32 == 0). codes: k e4m3 bytes. scales: k/32 fp32 powers of two.
void QuantizeActE4m3Ref(const uint16_t* x, int64_t k, uint8_t* codes, float* scales);

// x: k bf16 values (k % 32 == 0). out: k bf16 values q·s (the scaled activations).
void QuantizeActScaledBf16Ref(const uint16_t* x, int64_t k, uint16_t* out);

// Same contract and bit-identical output for every finite input (tested); NaN/inf inputs give
// unspecified (but memory-safe) output. Requires AVX-512 (ActiveCpuLevel() == kAvx512).
void QuantizeActScaledBf16Avx512(const uint16_t* x, int64_t k, uint16_t* out);

// The same with AVX2 (ActiveCpuLevel() >= kAvx2), same contract, bit-identical (tested).
void QuantizeActScaledBf16Avx2(const uint16_t* x, int64_t k, uint16_t* out);

// Picks the fastest implementation for the active CPU level.
void QuantizeActScaledBf16(const uint16_t* x, int64_t k, uint16_t* out);

}  // namespace deepinfer::kernels
