// Dense FP8 (e4m3 weights, 32x32 ue8m0 tile scales) GEMV/GEMM on the CPU: y = x · Wᵀ.
//
// Numerics (the official `linear` on FP8 weights; the same for every path, shape and thread count):
//   xq = act_quant(x): bf16 q·sx per 32 elements of each row (kernels/cpu/act_quant.h).
//   For each output (m, n), with K blocks b = 0 .. K/32-1 in ascending order:
//     blocksum_b = 0; for j = 0..15:  blocksum_b += xq[2j+1]·w[2j+1];  blocksum_b += xq[2j]·w[2j]
//                  (k relative to the block; each add rounded to fp32 RNE: the `vdpbf16ps` order)
//     tot = fma(blocksum_b, sw[n/32][b], tot)        (tot starts at +0; one rounding per block)
//   out = tot (fp32) or bf16_rne(tot).
// The products xq·w are exact in fp32 and every partial sum is a multiple of 2^-39 (xq is a
// multiple of 2^-30, w of 2^-9), so no value inside a block sum is ever an fp32 subnormal: the
// DAZ/FTZ of `vdpbf16ps` never acts, and the FMA (AVX2) and plain C++ (scalar) kernels give the
// same bits. The order depends only on K, never on M, the batch composition, the path or the thread
// count.
//
// Weights are repacked once at load time (PackFp8Matrix) into the layout the kernels stream:
//   codes  [n_panels = ceil(N/64)][K/32 blocks][8 steps][4 groups][64 B]
//          one 64-byte chunk = 16 rows (of the group) x 4 k (of the step), bytes permuted so that
//          the AVX-512 decode (affine or LUT, then unpack lo/hi) yields two registers of 16 rows x
//          one k-pair; rows >= N are zero codes.
//   scales [n_panels][K/32][2] fp32: the tile scale of each 32-row half of the panel.
//   special_chunks [n_panels][K/32] uint32: bit s·4 + g set when that chunk holds a code with
//          exponent field 0 (±0, subnormals) or a NaN code. The AVX-512 GEMV decodes every other
//          chunk with two affine byte transforms and decodes these with the LUT
//          (fp8_decode_avx512.h); about 0.5% of the chunks of a Gaussian tile.
// Threads split the N panels, never K.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/cpu/aligned_buffer.h"

namespace deepinfer::kernels {

inline constexpr int64_t kFp8PanelRows = 64;                           // rows of W per panel
inline constexpr int64_t kFp8BlockK = 32;                              // K per scale block
inline constexpr int64_t kFp8ChunkBytes = 64;                          // 16 rows x 4 k
inline constexpr int64_t kFp8BlockBytes = kFp8PanelRows * kFp8BlockK;  // 2 KiB per panel-block

struct PackedFp8Matrix {
  int64_t n = 0;         // output features (rows of W)
  int64_t k = 0;         // input features, a multiple of 32
  int64_t n_panels = 0;  // ceil(n / 64)
  AlignedBuffer<uint8_t> codes;
  AlignedBuffer<float> scales;
  AlignedBuffer<uint32_t> special_chunks;
  // Some code is a NaN (0x7F / 0xFF). Checkpoints never hold one; the AVX2 kernels decode only
  // finite codes and send such a matrix to the scalar path.
  bool nan_codes = false;

  int64_t k_blocks() const { return k / kFp8BlockK; }
  const uint8_t* PanelCodes(int64_t p) const {
    return codes.data() + p * k_blocks() * kFp8BlockBytes;
  }
  const float* PanelScales(int64_t p) const { return scales.data() + p * k_blocks() * 2; }
  const uint32_t* PanelSpecialChunks(int64_t p) const {
    return special_chunks.data() + p * k_blocks();
  }
  // Bytes a full pass of the GEMV reads: codes, scales and special-chunk masks.
  int64_t StreamBytes() const {
    return n_panels * k_blocks() *
           (kFp8BlockBytes + 2 * static_cast<int64_t>(sizeof(float)) +
            static_cast<int64_t>(sizeof(uint32_t)));
  }
};

// codes: [n][k] e4m3 bytes (row-major, as stored). scales: [ceil(n/32)][k/32] ue8m0 bytes.
// Fails on k % 32 != 0, n or k <= 0, or a NaN scale (0xFF).
StatusOr<PackedFp8Matrix> PackFp8Matrix(const uint8_t* codes, const uint8_t* scales, int64_t n,
                                        int64_t k);

enum class ActKind { kRawBf16, kQuantizedBf16 };
enum class OutDtype { kBf16, kF32 };

struct Fp8GemmParams {
  const uint16_t* x = nullptr;  // [m][ldx] bf16
  int64_t m = 0;
  int64_t ldx = 0;                     // >= k (elements)
  ActKind x_kind = ActKind::kRawBf16;  // raw: quantized inside; quantized: xq from act_quant
  void* out = nullptr;                 // [m][ldo] of out_dtype
  int64_t ldo = 0;                     // >= n (elements)
  OutDtype out_dtype = OutDtype::kBf16;
};

// out = x · Wᵀ with the numerics above, on `pool` (its size is the thread count). Picks the kernel
// from ActiveCpuLevel() and m: on AVX-512 the GEMV (m = 1), GEMV-M (m up to kFp8GemvMaxRows, 8
// rows at a time) or the panel GEMM; on AVX2 the GEMV (m = 1) or the register-blocked GEMM. Errors
// on null pointers or inconsistent sizes.
Status Fp8Gemm(const Fp8GemmParams& params, const PackedFp8Matrix& w, ThreadPool& pool);

// Several independent products in one call (e.g. the output groups of `wo_a`). On AVX-512 and
// AVX2, jobs of up to 64 rows with ActKind::kQuantizedBf16 input (the GEMV / GEMV-M paths) share
// one parallel region over the union of their weight panels: one thread hand-off instead of one per
// job. Other jobs (the panel GEMM, which balances its own work; raw input) run one after the
// other through Fp8Gemm. Each output gets exactly the
// bits Fp8Gemm gives it. Errors as Fp8Gemm, checked for every job before any runs.
struct Fp8GemmJob {
  const PackedFp8Matrix* w = nullptr;
  Fp8GemmParams params;
};
Status Fp8GemmMany(std::span<const Fp8GemmJob> jobs, ThreadPool& pool);

// Convenience forms: raw bf16 x [m][k] (quantized inside) -> bf16 / fp32 out [m][n], dense.
Status Fp8GemmBf16(const uint16_t* x, int64_t m, const PackedFp8Matrix& w, uint16_t* out,
                   ThreadPool& pool);
Status Fp8GemmF32(const uint16_t* x, int64_t m, const PackedFp8Matrix& w, float* out,
                  ThreadPool& pool);

}  // namespace deepinfer::kernels
