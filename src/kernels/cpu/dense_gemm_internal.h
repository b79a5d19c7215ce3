// Internal: the shared plumbing of the bf16 and fp32 lane-partial GEMMs (gemm_bf16.h,
// gemm_f32.h): the call description, the fixed 16-lane reduction tree, and the per-level kernels.
#pragma once

#include <cstdint>

#include "core/bf16.h"
#include "core/dtype.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

inline constexpr int kDenseLanes = 16;

struct DenseGemmCall {
  const void* w;  // [n][ldw] of w_dtype
  DType w_dtype;  // kBF16 or kF32
  int64_t n, k, ldw;
  const void* x;  // [n_rows][ldx] of x_dtype (kBF16 for GemmBf16; kF32 or kBF16 for GemmF32)
  DType x_dtype;
  int64_t n_rows, ldx;
  void* out;
  DType out_dtype;
  int64_t ldo;
};

// The fixed tree: ((P[l] + P[l+8]) pairs, then +4, +2, +1).
inline float ReduceLanes16(const float* p) {
  float s8[8], s4[4], s2[2];
  for (int l = 0; l < 8; ++l) s8[l] = p[l] + p[l + 8];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  for (int l = 0; l < 2; ++l) s2[l] = s4[l] + s4[l + 2];
  return s2[0] + s2[1];
}

inline void StoreDenseOut(const DenseGemmCall& c, int64_t m, int64_t n, float v) {
  if (c.out_dtype == DType::kF32) {
    static_cast<float*>(c.out)[m * c.ldo + n] = v;
  } else {
    static_cast<uint16_t*>(c.out)[m * c.ldo + n] = FloatToBf16(v);
  }
}

// Each computes out[0, n_rows) x [n_begin, n_end).
void GemmBf16RowsRef(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);
void GemmBf16RowsAvx2(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);
void GemmBf16RowsAvx512(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);
void GemmF32RowsRef(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);
void GemmF32RowsAvx2(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);
void GemmF32RowsAvx512(const DenseGemmCall& c, int64_t n_begin, int64_t n_end);

// Checks the call and splits N over the pool (grain 16 rows), running fn(c, begin, end).
void RunDenseGemm(const DenseGemmCall& c, ThreadPool* pool,
                  void (*fn)(const DenseGemmCall&, int64_t, int64_t));

}  // namespace deepinfer::kernels
