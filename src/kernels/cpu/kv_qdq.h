// Quantize-dequantize (QDQ) of bf16 vectors in place, the three forms the reference applies to
// cached keys (fixture README "Numerics"; kernel_cpu.py act_quant / fp4_act_quant, inplace=True).
// Every form works on consecutive groups of the row; n must be a multiple of the group size.
//
// Pow2Scale(amax, inv_max) = 2^ceil(log2(amax * inv_max)): the fp32 product's exponent, plus one
// when its mantissa is non-zero (the kernels' fast_round_scale bit manipulation).
//
// * Fp8QdqBlock32 (window KV, after RMSNorm + RoPE, rope lanes included):
//     s = Pow2Scale(max(amax, 1e-4), fp32(1/448)); y = bf16(e4m3_rne_sat(x / s) * s)
// * Fp4QdqE4m3Block16 (compressed KV, after RoPE):
//     s = e4m3_rne_sat(max(amax, 6*2^-9) / 6)  (fp32 division, then the e4m3 value);
//     y = bf16(e2m1(clamp(x / s, -6, 6)) * s)   (x / s is a true fp32 division here)
// * Fp4QdqPow2Block32 (index q and k, after RoPE):
//     s = Pow2Scale(max(amax, 6*2^-126), fp32(1/6)); y = bf16(e2m1(clamp(x / s, -6, 6)) * s)
// e2m1 rounds to the nearest of {0, .5, 1, 1.5, 2, 3, 4, 6}, ties to the even code (core/e2m1.h).
// amax is the largest |x| of the group's non-NaN elements.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

float Pow2Scale(float amax, float inv_max);

void Fp8QdqBlock32(uint16_t* x, int64_t n);
void Fp4QdqE4m3Block16(uint16_t* x, int64_t n);
void Fp4QdqPow2Block32(uint16_t* x, int64_t n);

// The scalar form of Fp4QdqPow2Block32 and its AVX-512 form (bit-identical; only when
// ActiveCpuLevel() == kAvx512). Fp4QdqPow2Block32 takes the active level's.
void Fp4QdqPow2Block32Ref(uint16_t* x, int64_t n);
void Fp4QdqPow2Block32Avx512(uint16_t* x, int64_t n);

}  // namespace deepinfer::kernels
