// Internal: per-level MXFP4 panel kernels behind Mxfp4Gemm (mxfp4_gemm.cc dispatches).
//
// Each computes out rows [0, n_rows) for the panels [p_begin, p_end) of w. `xpacked` is only read
// by the AVX-512 GEMV-M path (n_rows > 1): activation k-pairs repacked per 8-row chunk c as
// xpacked[c·(k/2)·8 + pair·Mc + i] = dword of (xq[8c+i][2·pair], xq[8c+i][2·pair+1]), Mc the
// chunk's row count.
#pragma once

#include <cstdint>

#include "core/bf16.h"
#include "core/dtype.h"
#include "core/e2m1.h"
#include "kernels/cpu/mxfp4_gemm.h"

namespace deepinfer::kernels {

inline constexpr int kMxfp4ChunkRows = 8;  // GEMV-M handles up to 8 activation rows at once
// The GEMVs' software prefetch of the packed stream (both levels): lines this far ahead into L1,
// and in the spread form (StreamPrefetchStyle, core/cpu_features.h) this far ahead into L2.
inline constexpr int64_t kMxfp4PrefetchBytes = 4096;
inline constexpr int64_t kMxfp4L2PrefetchBytes = 32768;
// From this many rows on, AVX-512 runs the panel GEMM (weights decoded once per call) instead of
// GEMV-M (weights decoded again per 8 rows); both give the same bits (mxfp4_gemm_bench crossover).
inline constexpr int64_t kMxfp4PanelGemmMinRows = 32;
// The AVX2 crossover (mxfp4_gemm_bench, one core of the AVX2 host, W13 shape): GEMV-M 18.5 and
// panel GEMM 15.2 GFLOP/s at 8 rows; 22.2 (panel) at 12; 21.8 vs 19.0 at 16.
inline constexpr int64_t kMxfp4Avx2PanelGemmMinRows = 12;
inline int64_t Mxfp4PanelGemmMinRows(CpuLevel level) {
  return level == CpuLevel::kAvx2 ? kMxfp4Avx2PanelGemmMinRows : kMxfp4PanelGemmMinRows;
}

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

// The nibble -> bf16 byte lookup tables of the AVX2 decoder (vpshufb): low[i] / high[i] are the low
// and high bytes of bf16(e2m1 value of nibble i), sign included.
struct E2m1Bf16ByteTables {
  alignas(16) uint8_t low[16];
  alignas(16) uint8_t high[16];
};
inline E2m1Bf16ByteTables MakeE2m1Bf16ByteTables() {
  E2m1Bf16ByteTables t;
  for (int i = 0; i < 16; ++i) {
    const uint16_t b = FloatToBf16(E2m1ToFloat(static_cast<uint8_t>(i)));
    t.low[i] = static_cast<uint8_t>(b & 0xFF);
    t.high[i] = static_cast<uint8_t>(b >> 8);
  }
  return t;
}

// One row's dword of a packed chunk (mxfp4_gemm.h) from its 4 checkpoint bytes of a step (byte j =
// k-pair j: even element in the low nibble, odd in the high), and checkpoint byte j back from it.
inline uint32_t Mxfp4ChunkDword(const uint8_t checkpoint_bytes[4]) {
  uint32_t d = 0;
  for (int j = 0; j < 4; ++j) {
    d |= static_cast<uint32_t>(checkpoint_bytes[j] & 0xF) << (4 * j);
    d |= static_cast<uint32_t>(checkpoint_bytes[j] >> 4) << (16 + 4 * j);
  }
  return d;
}
inline uint8_t Mxfp4CheckpointByte(uint32_t dword, int j) {
  return static_cast<uint8_t>(((dword >> (4 * j)) & 0xF) | (((dword >> (16 + 4 * j)) & 0xF) << 4));
}

void Mxfp4PanelsScalar(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);
void Mxfp4PanelsAvx2(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);
void Mxfp4PanelsAvx512(const Mxfp4Call& call, int64_t p_begin, int64_t p_end);

// AVX-512 panel GEMM over all of out (any n_rows >= 1; `xpacked` unused); splits 32-row units of
// W over pool (nullptr: the calling thread). mxfp4_panel_gemm_avx512.cc.
void Mxfp4PanelGemmAvx512(const Mxfp4Call& call, ThreadPool* pool);
// The AVX2 (FMA) panel GEMM, same contract: 16-column units of W over pool, fp32 decode.
// mxfp4_panel_gemm_avx2.cc.
void Mxfp4PanelGemmAvx2(const Mxfp4Call& call, ThreadPool* pool);

}  // namespace deepinfer::kernels
