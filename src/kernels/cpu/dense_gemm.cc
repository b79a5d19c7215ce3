// Shared driver of the bf16 / fp32 lane-partial GEMMs: argument checks and the split over N.
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dense_gemm_internal.h"

namespace deepinfer::kernels {
namespace {
constexpr int64_t kRowSplitMinRows = 8;
constexpr int64_t kOutputGrain = 4;
}  // namespace

void RunDenseGemm(const DenseGemmCall& c, ThreadPool* pool,
                  void (*fn)(const DenseGemmCall&, int64_t, int64_t)) {
  CHECK(c.out_dtype == DType::kF32 || c.out_dtype == DType::kBF16) << "dense GEMM output dtype";
  CHECK(c.w_dtype == DType::kF32 || c.w_dtype == DType::kBF16) << "dense GEMM weight dtype";
  CHECK(c.k >= 0 && c.ldw >= c.k && c.ldx >= c.k && c.ldo >= c.n)
      << "k " << c.k << " ldw " << c.ldw << " ldx " << c.ldx << " n " << c.n << " ldo " << c.ldo;
  if (c.n_rows <= 0 || c.n <= 0) return;
  if (pool == nullptr) {
    fn(c, 0, c.n);
  } else if (c.n < 16 * 2 * pool->size() && c.n_rows >= kRowSplitMinRows) {
    // Few outputs, many rows (e.g. the hc mixes, N = 24): splitting N would leave threads idle
    // or unbalanced, so split the rows. Each output's order depends only on K, so either split
    // gives the same bits.
    const int64_t xs = c.x_dtype == DType::kF32 ? 4 : 2, os = c.out_dtype == DType::kF32 ? 4 : 2;
    pool->ParallelFor(c.n_rows, 4, [&](int64_t r0, int64_t r1) {
      DenseGemmCall sub = c;
      sub.x = static_cast<const char*>(c.x) + r0 * c.ldx * xs;
      sub.out = static_cast<char*>(c.out) + r0 * c.ldo * os;
      sub.n_rows = r1 - r0;
      fn(sub, 0, c.n);
    });
  } else {
    // Ranges in whole 4-output tiles (the widest tile of any level): the 24 hc mixes of one row
    // split 12 / 12 over two threads, where 16-output ranges gave 16 / 8.
    pool->ParallelFor(c.n, kOutputGrain, [&](int64_t begin, int64_t end) { fn(c, begin, end); });
  }
}

}  // namespace deepinfer::kernels
