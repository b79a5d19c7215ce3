// Entry points of the dense FP8 GEMM: argument checks, activation quantization, ISA dispatch.
#include "kernels/cpu/fp8_gemm.h"

#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/fp8_gemm_internal.h"

namespace deepinfer::kernels {

namespace {
// Rows per parallel quantization region worth a fork/join (~1 µs per 5120-wide row).
constexpr int64_t kQuantRowsPerThread = 16;

Status CheckParams(const Fp8GemmParams& params, const PackedFp8Matrix& w) {
  if (params.x == nullptr || params.out == nullptr) return InvalidArgument("Fp8Gemm: null x/out");
  if (w.n <= 0 || w.codes.data() == nullptr) return InvalidArgument("Fp8Gemm: empty weights");
  if (params.ldx < w.k || params.ldo < w.n) {
    return InvalidArgument(
        "Fp8Gemm: ldx=" + std::to_string(params.ldx) + " must be >= k=" + std::to_string(w.k) +
        " and ldo=" + std::to_string(params.ldo) + " >= n=" + std::to_string(w.n));
  }
  return Status::Ok();
}
}  // namespace

Status Fp8Gemm(const Fp8GemmParams& params, const PackedFp8Matrix& w, ThreadPool& pool) {
  if (params.m <= 0) return Status::Ok();
  DI_RETURN_IF_ERROR(CheckParams(params, w));
  const uint16_t* xq = params.x;
  int64_t ldq = params.ldx;
  thread_local AlignedBuffer<uint16_t> xq_buf;
  if (params.x_kind == ActKind::kRawBf16) {
    xq_buf.EnsureSize(static_cast<size_t>(params.m * w.k));
    uint16_t* dst = xq_buf.data();
    auto quantize = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        QuantizeActScaledBf16(params.x + r * params.ldx, w.k, dst + r * w.k);
      }
    };
    if (params.m >= 2 * kQuantRowsPerThread) {
      pool.ParallelFor(params.m, kQuantRowsPerThread, quantize);
    } else {
      quantize(0, params.m);
    }
    xq = dst;
    ldq = w.k;
  }
  const fp8_internal::OutView out{params.out, params.ldo, params.out_dtype};
  switch (ActiveCpuLevel()) {
    case CpuLevel::kAvx512:
      fp8_internal::Fp8GemmAvx512(xq, params.m, ldq, w, out, pool);
      break;
    case CpuLevel::kAvx2:
      fp8_internal::Fp8GemmAvx2(xq, params.m, ldq, w, out, pool);
      break;
    case CpuLevel::kScalar:
      fp8_internal::Fp8GemmScalar(xq, params.m, ldq, w, out, pool);
      break;
  }
  return Status::Ok();
}

Status Fp8GemmMany(std::span<const Fp8GemmJob> jobs, ThreadPool& pool) {
  for (const Fp8GemmJob& j : jobs) {
    if (j.w == nullptr) return InvalidArgument("Fp8GemmMany: null weights");
    if (j.params.m > 0) DI_RETURN_IF_ERROR(CheckParams(j.params, *j.w));
  }
  // Small quantized jobs share one region; the rest (raw activations to quantize, the panel GEMM,
  // the scalar level) go through Fp8Gemm one by one.
  const CpuLevel level = ActiveCpuLevel();
  thread_local std::vector<fp8_internal::Fp8GemvJob> small;
  small.clear();
  for (const Fp8GemmJob& j : jobs) {
    const Fp8GemmParams& p = j.params;
    if (p.m <= 0) continue;
    if (level != CpuLevel::kScalar && p.m <= fp8_internal::kGemvMaxRows &&
        p.x_kind == ActKind::kQuantizedBf16) {
      small.push_back({p.x, p.m, p.ldx, j.w, {p.out, p.ldo, p.out_dtype}});
    } else {
      DI_RETURN_IF_ERROR(Fp8Gemm(p, *j.w, pool));
    }
  }
  if (!small.empty()) {
    const int64_t n_small = static_cast<int64_t>(small.size());
    if (level == CpuLevel::kAvx512) {
      fp8_internal::Fp8GemvManyAvx512(small.data(), n_small, pool);
    } else {
      fp8_internal::Fp8GemvManyAvx2(small.data(), n_small, pool);
    }
  }
  return Status::Ok();
}

namespace {
// Dense row-major x [m, k] and out [m, n], raw bf16 activations.
Status DenseFp8Gemm(const uint16_t* x, int64_t m, const PackedFp8Matrix& w, void* out,
                    OutDtype out_dtype, ThreadPool& pool) {
  Fp8GemmParams p;
  p.x = x;
  p.m = m;
  p.ldx = w.k;
  p.out = out;
  p.ldo = w.n;
  p.out_dtype = out_dtype;
  return Fp8Gemm(p, w, pool);
}
}  // namespace

Status Fp8GemmBf16(const uint16_t* x, int64_t m, const PackedFp8Matrix& w, uint16_t* out,
                   ThreadPool& pool) {
  return DenseFp8Gemm(x, m, w, out, OutDtype::kBf16, pool);
}

Status Fp8GemmF32(const uint16_t* x, int64_t m, const PackedFp8Matrix& w, float* out,
                  ThreadPool& pool) {
  return DenseFp8Gemm(x, m, w, out, OutDtype::kF32, pool);
}

}  // namespace deepinfer::kernels
