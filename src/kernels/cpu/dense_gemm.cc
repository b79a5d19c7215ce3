// Shared driver of the bf16 / fp32 lane-partial GEMMs: argument checks and the split over N.
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dense_gemm_internal.h"

namespace deepinfer::kernels {

void RunDenseGemm(const DenseGemmCall& c, ThreadPool* pool,
                  void (*fn)(const DenseGemmCall&, int64_t, int64_t)) {
  CHECK(c.out_dtype == DType::kF32 || c.out_dtype == DType::kBF16) << "dense GEMM output dtype";
  CHECK(c.w_dtype == DType::kF32 || c.w_dtype == DType::kBF16) << "dense GEMM weight dtype";
  CHECK(c.k >= 0 && c.ldw >= c.k && c.ldx >= c.k && c.ldo >= c.n)
      << "k " << c.k << " ldw " << c.ldw << " ldx " << c.ldx << " n " << c.n << " ldo " << c.ldo;
  if (c.n_rows <= 0 || c.n <= 0) return;
  if (pool == nullptr) {
    fn(c, 0, c.n);
  } else {
    pool->ParallelFor(c.n, 16, [&](int64_t begin, int64_t end) { fn(c, begin, end); });
  }
}

}  // namespace deepinfer::kernels
