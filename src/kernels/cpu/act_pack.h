// Activation packing for the block-scaled GEMV-M / GEMM kernels (FP8 dense and MXFP4 experts).
//
// Inputs are scaled activations xq (bf16 q·s from QuantizeActScaledBf16), row-major [m][ldx].
// The kernels broadcast one bf16 pair (xq[2j], xq[2j+1]) as a dword into `vdpbf16ps`, so both
// layouts below are arrays of such dwords (low half = the even k, as in memory):
//   * PackActPairs:  [k/2 pairs][m]           (GEMV-M: one base pointer, m·4-byte displacements)
//   * PackActTile:   [k/2 pairs][tile_rows]   (GEMM microkernel A tile; rows >= m are zero)
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

// xq: [m][ldx] bf16, k even. out: [k/2][m] dwords.
void PackActPairs(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, uint32_t* out);

// xq: [m][ldx] bf16 with m <= tile_rows, k even. out: [k/2][tile_rows] dwords, zero-padded rows.
void PackActTile(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, int tile_rows,
                 uint32_t* out);

}  // namespace deepinfer::kernels
