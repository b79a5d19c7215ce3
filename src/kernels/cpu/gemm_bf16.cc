// bf16 GEMM: scalar reference (also the scalar-level kernel) and run-time dispatch.
#include "kernels/cpu/gemm_bf16.h"
#include "core/bf16.h"
#include "core/check.h"
#include "kernels/cpu/dense_gemm_internal.h"
#include "kernels/cpu/dpbf16_step.h"

namespace deepinfer::kernels {

void GemmBf16RowsRef(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  const auto* w = static_cast<const uint16_t*>(c.w);
  const auto* x = static_cast<const uint16_t*>(c.x);
  const int64_t n_pairs = (c.k + 31) / 32 * 16;  // K zero-padded to a multiple of 32
  // Element i of a row, zero past k.
  auto at = [&](const uint16_t* row, int64_t i) -> uint32_t { return i < c.k ? row[i] : 0; };
  for (int64_t m = 0; m < c.n_rows; ++m) {
    const uint16_t* xr = x + m * c.ldx;
    for (int64_t n = n_begin; n < n_end; ++n) {
      const uint16_t* wr = w + n * c.ldw;
      float lanes[kDenseLanes] = {};
      for (int64_t q = 0; q < n_pairs; ++q) {
        const uint32_t xp = at(xr, 2 * q) | (at(xr, 2 * q + 1) << 16);
        const uint32_t wp = at(wr, 2 * q) | (at(wr, 2 * q + 1) << 16);
        lanes[q % kDenseLanes] = DpBf16Step(lanes[q % kDenseLanes], xp, wp);
      }
      StoreDenseOut(c, m, n, ReduceLanes16(lanes));
    }
  }
}

void GemmBf16Ref(const uint16_t* w, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
                 int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo) {
  const DenseGemmCall c{w,      DType::kBF16, n,   k,         ldw, x, DType::kBF16,
                        n_rows, ldx,          out, out_dtype, ldo};
  RunDenseGemm(c, nullptr, GemmBf16RowsRef);
}

void GemmBf16At(CpuLevel level, const uint16_t* w, int64_t n, int64_t k, int64_t ldw,
                const uint16_t* x, int64_t n_rows, int64_t ldx, void* out, DType out_dtype,
                int64_t ldo, ThreadPool* pool) {
  CHECK(static_cast<int>(level) <= static_cast<int>(GetCpuFeatures().BestLevel()))
      << "CPU level " << CpuLevelName(level) << " not supported here";
  const DenseGemmCall c{w,      DType::kBF16, n,   k,         ldw, x, DType::kBF16,
                        n_rows, ldx,          out, out_dtype, ldo};
  switch (level) {
    case CpuLevel::kAvx512:
      RunDenseGemm(c, pool, GemmBf16RowsAvx512);
      break;
    case CpuLevel::kAvx2:
      RunDenseGemm(c, pool, GemmBf16RowsAvx2);
      break;
    case CpuLevel::kScalar:
      RunDenseGemm(c, pool, GemmBf16RowsRef);
      break;
  }
}

void GemmBf16(const uint16_t* w, int64_t n, int64_t k, int64_t ldw, const uint16_t* x,
              int64_t n_rows, int64_t ldx, void* out, DType out_dtype, int64_t ldo,
              ThreadPool* pool) {
  GemmBf16At(ActiveCpuLevel(), w, n, k, ldw, x, n_rows, ldx, out, out_dtype, ldo, pool);
}

}  // namespace deepinfer::kernels
