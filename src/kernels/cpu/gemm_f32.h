// Plain fp32 GEMM (MoE gate in fp32, ratio-2 compressor wkv/wgate, head / Markov head /
// confidence head in fp32):
//   out[m][n] = Σ_k x[m][k] · W[n][k],  W [N, K] row-major stored as fp32 or as bf16 (widened
//   exactly, so a bf16 checkpoint tensor that the module tree holds in fp32 needs no fp32 copy),
//   x [M, K] fp32, or bf16 widened exactly in registers (the hc mixes: the fp32 product of a bf16
//   stream without an fp32 copy of it), out fp32 or bf16 (RNE).
//
// Reduction order (depends only on K): K is zero-padded to a multiple of 16. Sixteen lane
// partials P[l] each run P = fma(x[k], w[k], P) over k ≡ l (mod 16) ascending, from +0 (IEEE
// fp32, subnormals kept: MXCSR is assumed to be the default). Then the fixed tree of gemm_bf16.h:
//   s8[l] = P[l] + P[l+8];  s4[l] = s8[l] + s8[l+4];  s2[l] = s4[l] + s4[l+2];  out = s2[0] +
//   s2[1].
// Threads split N, never K.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/dtype.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

// w: fp32 (w_dtype kF32) or bf16 (kBF16) elements, rows ldw apart. pool == nullptr: this thread.
void GemmF32(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const float* x,
             int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
             ThreadPool* pool);

// x bf16: the same result as widening x to fp32 first and calling the overload above.
void GemmF32(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
             int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
             ThreadPool* pool);

// x_dtype: kF32 or kBF16.
void GemmF32At(CpuLevel level, const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw,
               const void* x, DType x_dtype, int64_t n_rows, int64_t ldx, void* out,
               DType out_dtype, int64_t ldo, ThreadPool* pool);

// Scalar reference of the order above (single thread).
void GemmF32Ref(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const void* x,
                DType x_dtype, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                int64_t ldo);

}  // namespace deepinfer::kernels
