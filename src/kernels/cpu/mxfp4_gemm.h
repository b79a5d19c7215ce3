// MXFP4 routed-expert GEMM: out[M, N] = xq[M, K] · W[N, K]ᵀ with W in MXFP4.
//
// Checkpoint layout of W (per matrix): `weight` bytes [N, K/2], byte j of a row holding element 2j
// in its low nibble and 2j+1 in its high nibble (nibble = sign bit 3 + e2m1 magnitude code,
// core/e2m1.h), and ue8m0 `scale` codes [N, K/32], one per 32 elements of a row.
//
// Activations xq are the *scaled* e4m3 activations of kernels/cpu/act_quant.h (bf16 q·s, exact),
// so only the weight scale appears in the epilogue.
//
// Numerics (the official block structure, one order for every M, thread count and CPU level):
//   for each 32-K block b:
//     blocksum = 0; for each k-pair p of the block, ascending: blocksum = DpBf16Step(blocksum,
//                                                      xq pair p, w pair p)   (odd element first)
//     tot = fma(blocksum, 2^(sw[n][b] - 127), tot)
//   out = tot (fp32) or bf16_rne(tot).
// Threads split N panels, never K. Bit-identity between the CPU levels holds for quantizer
// outputs (every product then is an exact, normal fp32 number, so the vdpbf16ps subnormal rules
// never apply) and finite results.
//
// Packed layout (load-time repack, cpu_kernels.md §4/§9), same size as the checkpoint bytes up to
// N padding to a multiple of 64 (padding rows: zero weights, scale 1.0):
//   [panel of 64 rows][32-K block] { 64 B: ue8m0 codes of the panel's rows 0..63;
//                                   [step t 0..3][16-row group g 0..3] 64 B chunk }
// A chunk holds rows 16g..16g+15 × k-pairs 4t..4t+3 of the block: row r in the chunk's dword r,
// whose low word holds the even elements of k-pairs 4t+j (nibble j, bits 4j..4j+3) and whose high
// word the odd ones (Mxfp4ChunkDword, mxfp4_gemm_kernels.h). One vpermw of the word (shifted right
// by 4j) then decodes all 16 rows' k-pair j into one register of bf16 pairs (AVX-512); the AVX2
// decoder regroups the bytes of 4 rows with one vpshufb and goes through byte tables. Each thread
// reads one forward stream.
//
// Fused w1|w3: pack the two matrices as parts {w1, w3}; the parts are concatenated along N, so a
// single pass gives out[:, 0:inter] = w1·x (gate) and out[:, inter:2·inter] = w3·x (up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/huge_pages.h"
#include "core/status.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

inline constexpr int64_t kMxfp4PanelRows = 64;
inline constexpr int64_t kMxfp4Block = 32;                      // K elements per scale
inline constexpr int64_t kMxfp4PanelBlockBytes = 64 + 16 * 64;  // scales + 16 chunks

// One checkpoint matrix (or a row range of one) to pack: weight [rows, k/2], scale [rows, k/32].
struct Mxfp4Source {
  const uint8_t* weight = nullptr;
  const uint8_t* scale = nullptr;
  int64_t rows = 0;
};

// Non-owning view of a packed matrix (what the kernels take).
struct PackedMxfp4View {
  const uint8_t* data = nullptr;  // 64-byte aligned
  int64_t n = 0;                  // logical rows (outputs)
  int64_t k = 0;                  // inputs, a multiple of 32

  int64_t n_panels() const { return (n + kMxfp4PanelRows - 1) / kMxfp4PanelRows; }
  int64_t n_blocks() const { return k / kMxfp4Block; }
  int64_t panel_bytes() const { return n_blocks() * kMxfp4PanelBlockBytes; }
  const uint8_t* panel(int64_t p) const { return data + p * panel_bytes(); }
};

// Bytes of the packed form of an [n, k] matrix.
size_t PackedMxfp4Bytes(int64_t n, int64_t k);

// Packs the row-concatenation of `parts` into dst (PackedMxfp4Bytes(sum rows, k) bytes, 64-byte
// aligned). Errors: k not a positive multiple of 32, a part without data, a NaN scale (0xFF).
Status PackMxfp4Into(std::span<const Mxfp4Source> parts, int64_t k, uint8_t* dst);

// Owning packed matrix.
class PackedMxfp4Matrix {
 public:
  static StatusOr<PackedMxfp4Matrix> Pack(std::span<const Mxfp4Source> parts, int64_t k);
  // w1 and w3 of one expert as one N = rows(w1) + rows(w3) matrix (w1 rows first).
  static StatusOr<PackedMxfp4Matrix> PackFused(const Mxfp4Source& w1, const Mxfp4Source& w3,
                                               int64_t k);

  const PackedMxfp4View& view() const { return view_; }
  int64_t n() const { return view_.n; }
  int64_t k() const { return view_.k; }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<uint8_t[], FreeLarge> buffer_;  // from AllocateLarge
  size_t bytes_ = 0;
  PackedMxfp4View view_;
};

// out[m][n] for m < n_rows (x rows ldx elements apart, out rows ldo elements apart); out_dtype is
// DType::kF32 (float*) or DType::kBF16 (uint16_t*). pool == nullptr runs on the calling thread
// (e.g. inside a caller's per-expert parallel region); otherwise the N panels are split over it.
void Mxfp4Gemm(const PackedMxfp4View& w, const uint16_t* xq, int64_t n_rows, int64_t ldx, void* out,
               DType out_dtype, int64_t ldo, ThreadPool* pool);

// Several independent products in one call (e.g. all routed experts of a decode step): jobs
// below Mxfp4PanelGemmMinRows(level) rows (mxfp4_gemm_kernels.h) share one parallel region over the
// union of their panels (one thread hand-off instead of one per job); larger jobs run one after
// the other through Mxfp4Gemm. Each output gets exactly the bits Mxfp4Gemm gives it.
struct Mxfp4Job {
  PackedMxfp4View w;
  const uint16_t* xq = nullptr;
  int64_t n_rows = 0;
  int64_t ldx = 0;
  void* out = nullptr;
  DType out_dtype = DType::kBF16;
  int64_t ldo = 0;
};
void Mxfp4GemmMany(std::span<const Mxfp4Job> jobs, ThreadPool* pool);

// The same on an explicit CPU level (tests); the level must not exceed the CPU's best.
void Mxfp4GemmAt(CpuLevel level, const PackedMxfp4View& w, const uint16_t* xq, int64_t n_rows,
                 int64_t ldx, void* out, DType out_dtype, int64_t ldo, ThreadPool* pool);

// Scalar reference on the checkpoint layout (weight [n, k/2], scale [n, k/32]); single thread.
void Mxfp4GemmRef(const uint8_t* weight, const uint8_t* scale, int64_t n, int64_t k,
                  const uint16_t* xq, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                  int64_t ldo);

}  // namespace deepinfer::kernels
