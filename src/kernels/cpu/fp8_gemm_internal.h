// Internal interface of the FP8 GEMM kernels (fp8_gemm.h): the per-ISA drivers, exposed so that
// tests can run every path on one machine. All take *scaled* activations xq (act_quant output) and
// produce exactly the numbers described in fp8_gemm.h.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/fp8_gemm.h"

namespace deepinfer::kernels::fp8_internal {

// Where results go: [m][ld] elements of `dtype`; only the n valid columns are written.
struct OutView {
  void* data;
  int64_t ld;
  OutDtype dtype;
};

// Rows above this use the panel GEMM on AVX-512; up to it, GEMV-M in 8-row chunks (measured
// crossover on Zen 5: GEMV-M wins 2x at m = 16 and ties at m = 64).
inline constexpr int64_t kGemvMaxRows = 64;

// The GEMVs' software prefetch of their weight stream (both levels): each line this far ahead into
// L1, and in the spread form (StreamPrefetchStyle, core/cpu_features.h) also this far into L2.
inline constexpr int64_t kGemvPrefetchBytes = 8192;
inline constexpr int64_t kGemvL2PrefetchBytes = 32768;

// Position of (row r in 0..15, k kk in 0..3) inside a 64-byte chunk. In 128-bit lane L = r/4 the
// first 8 bytes hold k 0,1 and the last 8 bytes k 2,3 of rows 4L..4L+3, pairs adjacent, so that
// unpacklo/hi of the decoded low/high bf16 bytes give (16 rows x pair (0,1)) and (pair (2,3)).
inline int ChunkPos(int r, int kk) { return (r / 4) * 16 + (kk / 2) * 8 + (r % 4) * 2 + (kk % 2); }

// A code the affine decode does not cover (fp8_decode_avx512.h): exponent field 0 (±0 and the
// subnormals) or NaN (0x7F / 0xFF). Its chunk is flagged in PackedFp8Matrix::special_chunks.
inline bool IsSpecialCode(uint8_t code) { return (code & 0x78) == 0 || (code & 0x7F) == 0x7F; }

// Which AVX-512 algorithm to run (tests force each one; production uses kAuto).
enum class Avx512Path { kAuto, kGemv, kGemm };

void Fp8GemmAvx512(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                   const OutView& out, ThreadPool& pool, Avx512Path path = Avx512Path::kAuto);
void Fp8GemmAvx2(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                 const OutView& out, ThreadPool& pool);
void Fp8GemmScalar(const uint16_t* xq, int64_t m, int64_t ldx, const PackedFp8Matrix& w,
                   const OutView& out, ThreadPool& pool);

// GEMV-M of several products in one parallel region over the union of their panels (each job
// m <= kGemvMaxRows, scaled activations). fp8_gemm_avx512.cc.
struct Fp8GemvJob {
  const uint16_t* xq;
  int64_t m;
  int64_t ldx;
  const PackedFp8Matrix* w;
  OutView out;
};
void Fp8GemvManyAvx512(const Fp8GemvJob* jobs, int64_t n_jobs, ThreadPool& pool);
// The same on AVX2 (fp8_gemm_avx2.cc): every job's bits are Fp8GemmAvx2's.
void Fp8GemvManyAvx2(const Fp8GemvJob* jobs, int64_t n_jobs, ThreadPool& pool);

// AVX2 pieces (fp8_gemm_avx2.cc, fp8_gemv_avx2.cc).
// Rows per register tile of the AVX2 GEMM microkernel (6 rows x 16 columns = 12 ymm accumulators).
inline constexpr int kAvx2TileRows = 6;
// Scaled activations widened to fp32 in tiles of kAvx2TileRows rows: tile t at out + t·6·k, laid
// out [k][rows of the tile] (the last tile may have fewer rows; m = 1 gives the plain row).
void PackActF32Tiles(const uint16_t* xq, int64_t m, int64_t ldx, int64_t k, float* out);
// m = 1 over panels [p0, p1): x is the fp32 row [k]; writes row 0 of `out`. Decodes each chunk
// in registers and multiplies it straight in (no decoded copy in memory).
void Fp8Gemv1PanelsAvx2(const float* x, const PackedFp8Matrix& w, int64_t p0, int64_t p1,
                        const OutView& out);

// AVX-512 pieces used by the driver (fp8_gemv_avx512.cc / fp8_gemm_avx512.cc).
// GEMV-M over panels [p0, p1) for all m rows, 8-row chunks (each panel is re-read from L2 for the
// chunks after the first). xp: activations packed per chunk of 8 rows: chunk r0/8 at
// xp + r0·(k/2), laid out [k/2][rows in chunk] (PackActPairs).
void Fp8GemvPanelsAvx512(const uint32_t* xp, int64_t m, const PackedFp8Matrix& w, int64_t p0,
                         int64_t p1, const OutView& out);

// Shared by the scalar and AVX2 drivers: decodes one panel-block (2 KiB of codes) to fp32 values
// wf[32 k][64 rows] (unscaled e4m3 values).
void DecodePanelBlockF32(const uint8_t* block, float* wf);

// Stores `count` fp32 totals of row `row`, starting at column `col`, in the view's dtype.
void StoreRowScalar(const OutView& out, int64_t row, int64_t col, const float* v, int64_t count);

}  // namespace deepinfer::kernels::fp8_internal
