// Internal: per-level MXFP4 panel kernels behind Mxfp4Gemm (mxfp4_gemm.cc dispatches).
//
// Each computes out rows [0, n_rows) for the panels [p_begin, p_end) of w. `xpacked` is only read
// by the AVX-512 GEMV-M path (n_rows > 1): activation k-pairs repacked per 8-row chunk c as
// xpacked[c·(k/2)·8 + pair·Mc + i] = dword of (xq[8c+i][2·pair], xq[8c+i][2·pair+1]), Mc the
// chunk's row count.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/mxfp4_gemm.h"

namespace deepinfer::kernels {

inline constexpr int kMxfp4ChunkRows = 8;  // GEMV-M handles up to 8 activation rows at once

struct Mxfp4Call {
  PackedMxfp4View w;
  const uint16_t* xq;
  int64_t n_rows;
  int64_t ldx;
  const uint32_t* xpacked;
  void* out;
  DType out_dtype;
  int64_t ldo;
};

void Mxfp4PanelsScalar(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);
void Mxfp4PanelsAvx2(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);
void Mxfp4PanelsAvx512(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);

}  // namespace deepinfer::kernels
