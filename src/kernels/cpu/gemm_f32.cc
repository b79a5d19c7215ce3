// fp32 GEMM: scalar reference (also the scalar-level kernel) and run-time dispatch.
#include <cmath>

#include "core/bf16.h"
#include "core/check.h"
#include "kernels/cpu/dense_gemm_internal.h"
#include "kernels/cpu/gemm_f32.h"

namespace deepinfer::kernels {

void GemmF32RowsRef(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  const int64_t k_pad = (c.k + 15) / 16 * 16;
  for (int64_t m = 0; m < c.n_rows; ++m) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      float lanes[kDenseLanes] = {};
      for (int64_t k = 0; k < k_pad; ++k) {
        float wv = 0.0f, xv = 0.0f;
        if (k < c.k) {
          wv = c.w_dtype == DType::kF32
                   ? static_cast<const float*>(c.w)[n * c.ldw + k]
                   : Bf16ToFloat(static_cast<const uint16_t*>(c.w)[n * c.ldw + k]);
          xv = c.x_dtype == DType::kF32
                   ? static_cast<const float*>(c.x)[m * c.ldx + k]
                   : Bf16ToFloat(static_cast<const uint16_t*>(c.x)[m * c.ldx + k]);
        }
        lanes[k % kDenseLanes] = std::fma(xv, wv, lanes[k % kDenseLanes]);
      }
      StoreDenseOut(c, m, n, ReduceLanes16(lanes));
    }
  }
}

void GemmF32Ref(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const void* x,
                DType x_dtype, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                int64_t ldo) {
  CHECK(x_dtype == DType::kF32 || x_dtype == DType::kBF16) << "fp32 GEMM activation dtype";
  const DenseGemmCall c{w, w_dtype, n, k, ldw, x, x_dtype, n_rows, ldx, out, out_dtype, ldo};
  RunDenseGemm(c, nullptr, GemmF32RowsRef);
}

void GemmF32At(CpuLevel level, const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw,
               const void* x, DType x_dtype, int64_t n_rows, int64_t ldx, void* out,
               DType out_dtype, int64_t ldo, ThreadPool* pool) {
  CHECK(static_cast<int>(level) <= static_cast<int>(GetCpuFeatures().BestLevel()))
      << "CPU level " << CpuLevelName(level) << " not supported here";
  CHECK(x_dtype == DType::kF32 || x_dtype == DType::kBF16) << "fp32 GEMM activation dtype";
  const DenseGemmCall c{w, w_dtype, n, k, ldw, x, x_dtype, n_rows, ldx, out, out_dtype, ldo};
  switch (level) {
    case CpuLevel::kAvx512:
      RunDenseGemm(c, pool, GemmF32RowsAvx512);
      break;
    case CpuLevel::kAvx2:
      RunDenseGemm(c, pool, GemmF32RowsAvx2);
      break;
    case CpuLevel::kScalar:
      RunDenseGemm(c, pool, GemmF32RowsRef);
      break;
  }
}

void GemmF32(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const float* x,
             int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
             ThreadPool* pool) {
  GemmF32At(ActiveCpuLevel(), w, w_dtype, n, k, ldw, x, DType::kF32, n_rows, ldx, out, out_dtype,
            ldo, pool);
}

void GemmF32(const void* w, DType w_dtype, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
             int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
             ThreadPool* pool) {
  GemmF32At(ActiveCpuLevel(), w, w_dtype, n, k, ldw, x, DType::kBF16, n_rows, ldx, out, out_dtype,
            ldo, pool);
}

}  // namespace deepinfer::kernels
