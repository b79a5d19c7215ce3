// RMSNorm over bf16 rows: y = bf16(w * (x * r)), r = 1 / sqrt(mean(x^2) + eps), all in fp32
// (the reference: x.float(); x * rsqrt(x.square().mean(-1) + eps); weight * x; cast to bf16).
//
// Reduction order (fixed, depends only on `dim`): the squares are summed into 64 fp32 lanes,
// element i into lane i % 64 in ascending i (x^2 is exact in fp32 for bf16 x, so fma or mul+add
// give the same bits); the lanes are then folded by halves, lane j += lane j + w for
// w = 32, 16, 8, 4, 2, 1. mean = sum / dim (fp32 division); r = 1 / sqrt(mean + eps) with a
// correctly rounded sqrt and division. The AVX-512 path evaluates exactly this, so both paths and
// every row count / thread split give identical bits.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

struct RmsNormParams {
  const uint16_t* x = nullptr;  // [n_rows][x_stride] bf16, dim used per row
  int64_t x_stride = 0;
  const uint16_t* weight = nullptr;  // [dim] bf16
  uint16_t* y = nullptr;             // [n_rows][y_stride] bf16; may alias x (same stride)
  int64_t y_stride = 0;
  int64_t n_rows = 0;
  int64_t dim = 0;
  float eps = 1e-20f;  // the model's norm_eps (1e-20, as an fp32 constant)
};

// Scalar reference (and fallback).
void RmsNormRef(const RmsNormParams& p);
// AVX-512 path; bit-identical to RmsNormRef. Only call when ActiveCpuLevel() == kAvx512.
void RmsNormAvx512(const RmsNormParams& p);
// AVX2 path; bit-identical to RmsNormRef. Only call when ActiveCpuLevel() >= kAvx2.
void RmsNormAvx2(const RmsNormParams& p);
// Dispatches on ActiveCpuLevel(). Single-threaded: norms are cheap, fuse or split rows outside.
void RmsNorm(const RmsNormParams& p);

// Convenience: n_rows dense rows of `dim` normalised in place with `weight`.
void RmsNormInPlace(const uint16_t* weight, uint16_t* rows, int64_t n_rows, int64_t dim,
                    double eps);

// The fp32 factor 1/sqrt(mean(x^2) + eps) of one row, in the order above (exposed for tests and
// for callers that fuse the normalisation elsewhere).
float RmsNormFactorRef(const uint16_t* x, int64_t dim, float eps);
// The same factor, same bits: AVX-512 (only when ActiveCpuLevel() == kAvx512), AVX2 and the
// dispatch.
float RmsNormFactorAvx512(const uint16_t* x, int64_t dim, float eps);
float RmsNormFactorAvx2(const uint16_t* x, int64_t dim, float eps);
float RmsNormFactor(const uint16_t* x, int64_t dim, float eps);

}  // namespace deepinfer::kernels
