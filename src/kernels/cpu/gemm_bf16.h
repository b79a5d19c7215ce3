// Plain bf16 GEMM for the unquantized projections (wo_a, compressor wkv at ratio 1, indexer wk,
// weights_proj, and the MoE gate whose fp32 products of bf16 values are exact):
//   out[m][n] = Σ_k x[m][k] · W[n][k],  W bf16 [N, K] row-major (the checkpoint layout, no repack),
//   x bf16 [M, K], fp32 accumulation, out fp32 or bf16 (RNE).
//
// Reduction order (depends only on K, so any M, tile, thread count or CPU level gives the same
// bits): K is zero-padded to a multiple of 32 and read as k-pairs q = (2q, 2q+1). Sixteen lane
// partials P[l] (l = 0..15) each run vdpbf16ps steps (kernels/cpu/dpbf16_step.h: odd element
// first, fused, DAZ/FTZ) over the pairs q ≡ l (mod 16) in ascending order, starting from +0.
// Then a fixed tree in plain IEEE fp32 adds:
//   s8[l] = P[l] + P[l+8] (l < 8);  s4[l] = s8[l] + s8[l+4];  s2[l] = s4[l] + s4[l+2];
//   out = s2[0] + s2[1].
// Threads split N, never K. The AVX-512 kernel uses vdpbf16ps; the AVX2 kernel two FMAs per
// pair under MXCSR DAZ|FTZ (restored before the tree); scalar is the reference itself.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/dtype.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

// w rows ldw elements apart, x rows ldx apart, out rows ldo apart; out_dtype kF32 or kBF16.
// pool == nullptr runs on the calling thread.
void GemmBf16(const uint16_t* w, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
              int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
              ThreadPool* pool);

void GemmBf16At(CpuLevel level, const uint16_t* w, int64_t n, int64_t k, int64_t ldw,
                const uint16_t* x, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                int64_t ldo, ThreadPool* pool);

// Scalar reference of the order above (single thread).
void GemmBf16Ref(const uint16_t* w, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
                 int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo);

}  // namespace deepinfer::kernels
