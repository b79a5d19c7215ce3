// Dense FP8 GEMM: every path (AVX-512 GEMV / GEMV-M / panel GEMM, AVX2, scalar) against the
// scalar reference built from the unpacked tensors, bit for bit; batch and thread-count
// invariance; and a float64 dequantized check with a stated error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/fp8_gemm.h"
#include "kernels/cpu/fp8_gemm_internal.h"
#include "kernels/cpu/fp8_gemm_ref.h"
#include "level_test_util.h"

namespace deepinfer::kernels {
namespace {

using fp8_internal::Avx512Path;
using fp8_internal::OutView;

using test_util::HaveAvx2;
using test_util::HaveAvx512;

struct Weights {
  int64_t n, k;
  std::vector<uint8_t> codes, scales;
};

// Random finite e4m3 codes: the 238 normal ones equally likely, one in 128 an exponent-0 code (±0
// or a subnormal) and every 97th a zero, so about a third of the 64-byte chunks hold only normal
// codes (the AVX-512 GEMV's affine decode) and the rest some special code (its LUT decode,
// fp8_gemm.h special_chunks); scale codes in [lo, hi].
Weights RandomWeights(int64_t n, int64_t k, uint32_t seed, int scale_lo = 112, int scale_hi = 132) {
  std::mt19937 rng(seed);
  Weights w{n, k, std::vector<uint8_t>(n * k), std::vector<uint8_t>(((n + 31) / 32) * (k / 32))};
  for (auto& c : w.codes) {
    uint8_t v;
    if (rng() % 128 == 0) {
      v = static_cast<uint8_t>(rng() & 0x87);  // sign and mantissa; exponent 0
    } else {
      do v = static_cast<uint8_t>(rng());
      while ((v & 0x7F) == 0x7F || (v & 0x78) == 0);
    }
    c = v;
  }
  for (int64_t i = 0; i < n * k; i += 97) w.codes[i] = 0;
  std::uniform_int_distribution<int> sc(scale_lo, scale_hi);
  for (auto& s : w.scales) s = static_cast<uint8_t>(sc(rng));
  return w;
}

// Raw bf16 activations with per-32-block magnitudes spanning many binades, zero blocks and
// outliers.
std::vector<uint16_t> RandomActs(int64_t m, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-24, 12);
  std::vector<uint16_t> x(m * k);
  for (int64_t b = 0; b < m * k / 32; ++b) {
    const float s = std::ldexp(1.0f, binade(rng));
    const int kind = static_cast<int>(rng() % 16);
    for (int i = 0; i < 32; ++i) {
      float v = normal(rng) * s;
      if (kind == 0) v = 0.0f;
      if (kind == 1 && i == 5) v *= 300.0f;
      x[b * 32 + i] = FloatToBf16(v);
    }
  }
  return x;
}

std::vector<uint16_t> Quantize(const std::vector<uint16_t>& x, int64_t m, int64_t k) {
  std::vector<uint16_t> xq(m * k);
  for (int64_t i = 0; i < m; ++i) QuantizeActScaledBf16Ref(x.data() + i * k, k, xq.data() + i * k);
  return xq;
}

PackedFp8Matrix Pack(const Weights& w) {
  auto packed = PackFp8Matrix(w.codes.data(), w.scales.data(), w.n, w.k);
  EXPECT_TRUE(packed.ok()) << packed.status().ToString();
  return std::move(packed).value();
}

// Random weights (packed) and quantized activations of an [m, k] x [n, k] product, and the
// reference's fp32 result from the unpacked tensors.
struct RefCase {
  Weights wt;
  PackedFp8Matrix w;
  std::vector<uint16_t> xq;
  std::vector<float> ref;
};

RefCase MakeRefCase(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  RefCase c{RandomWeights(n, k, seed), {}, Quantize(RandomActs(m, k, seed + 1), m, k), {}};
  c.w = Pack(c.wt);
  c.ref.resize(m * n);
  Fp8GemmRefQuantized(c.xq.data(), m, k, c.wt.codes.data(), c.wt.scales.data(), n, c.ref.data());
  return c;
}

enum class PathId { kAvx512Auto, kAvx512Gemv, kAvx512Gemm, kAvx2, kScalar };

// Runs one internal path on scaled activations; returns fp32 and bf16 outputs [m][n].
void RunPath(PathId path, const std::vector<uint16_t>& xq, int64_t m, const PackedFp8Matrix& w,
             ThreadPool& pool, std::vector<float>* f32, std::vector<uint16_t>* bf16) {
  f32->assign(m * w.n, std::nanf(""));
  bf16->assign(m * w.n, 0xFFFF);
  for (int pass = 0; pass < 2; ++pass) {
    OutView out = pass == 0 ? OutView{f32->data(), w.n, OutDtype::kF32}
                            : OutView{bf16->data(), w.n, OutDtype::kBf16};
    switch (path) {
      case PathId::kAvx512Auto:
        fp8_internal::Fp8GemmAvx512(xq.data(), m, w.k, w, out, pool, Avx512Path::kAuto);
        break;
      case PathId::kAvx512Gemv:
        fp8_internal::Fp8GemmAvx512(xq.data(), m, w.k, w, out, pool, Avx512Path::kGemv);
        break;
      case PathId::kAvx512Gemm:
        fp8_internal::Fp8GemmAvx512(xq.data(), m, w.k, w, out, pool, Avx512Path::kGemm);
        break;
      case PathId::kAvx2:
        fp8_internal::Fp8GemmAvx2(xq.data(), m, w.k, w, out, pool);
        break;
      case PathId::kScalar:
        fp8_internal::Fp8GemmScalar(xq.data(), m, w.k, w, out, pool);
        break;
    }
  }
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void ExpectBitExact(const std::vector<float>& ref, const std::vector<float>& f32,
                    const std::vector<uint16_t>& bf16, int64_t n, const char* what) {
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(Bits(ref[i]), Bits(f32[i])) << what << ": fp32 (m, n) = (" << i / n << ", " << i % n
                                          << ") ref " << ref[i] << " got " << f32[i];
    ASSERT_EQ(FloatToBf16(ref[i]), bf16[i])
        << what << ": bf16 (m, n) = (" << i / n << ", " << i % n << ")";
  }
}

std::vector<PathId> AvailablePaths() {
  std::vector<PathId> paths = {PathId::kScalar};
  if (HaveAvx2()) paths.push_back(PathId::kAvx2);
  if (HaveAvx512()) {
    paths.push_back(PathId::kAvx512Auto);
    paths.push_back(PathId::kAvx512Gemv);
    paths.push_back(PathId::kAvx512Gemm);
  }
  return paths;
}

const char* PathName(PathId p) {
  switch (p) {
    case PathId::kAvx512Auto:
      return "avx512-auto";
    case PathId::kAvx512Gemv:
      return "avx512-gemv";
    case PathId::kAvx512Gemm:
      return "avx512-gemm";
    case PathId::kAvx2:
      return "avx2";
    case PathId::kScalar:
      return "scalar";
  }
  return "?";
}

TEST(Fp8GemmTest, EveryPathMatchesReferenceBitExact) {
  ThreadPool pool1(1), pool2(2);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 32},    {1, 64, 32},  {2, 37, 64},   {3, 100, 96},
                          {5, 130, 320}, {8, 64, 160}, {9, 200, 64},  {17, 33, 96},
                          {15, 96, 128}, {49, 70, 64}, {100, 129, 96}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    const Weights wt = RandomWeights(s.n, s.k, seed++);
    const PackedFp8Matrix w = Pack(wt);
    const std::vector<uint16_t> xq = Quantize(RandomActs(s.m, s.k, seed++), s.m, s.k);
    std::vector<float> ref(s.m * s.n);
    Fp8GemmRefQuantized(xq.data(), s.m, s.k, wt.codes.data(), wt.scales.data(), s.n, ref.data());
    for (PathId path : AvailablePaths()) {
      for (ThreadPool* pool : {&pool1, &pool2}) {
        SCOPED_TRACE(testing::Message() << PathName(path) << " m=" << s.m << " n=" << s.n
                                        << " k=" << s.k << " threads=" << pool->size());
        std::vector<float> f32;
        std::vector<uint16_t> bf16;
        RunPath(path, xq, s.m, w, *pool, &f32, &bf16);
        ExpectBitExact(ref, f32, bf16, s.n, PathName(path));
      }
    }
  }
}

// Issue 27's batch invariance, row count by row count: every M in 1..64 (the GEMV, GEMV-M and
// panel GEMM ranges on AVX-512) through every path, one and two threads; a call's rows (taken at
// an offset that moves with M) get the bits the reference gives them in a 64-row batch.
TEST(Fp8GemmTest, EveryRowCountOneToSixtyFourOnEveryPath) {
  const int64_t n = 70, k = 160, rows = 64;
  const RefCase c = MakeRefCase(rows, n, k, 91);
  const std::vector<uint16_t>& xq = c.xq;
  const std::vector<float>& ref = c.ref;
  ThreadPool pool1(1), pool2(2);
  for (PathId path : AvailablePaths()) {
    for (int64_t m = 1; m <= rows; ++m) {
      const int64_t r0 = (m * 5) % (rows - m + 1);
      const std::vector<uint16_t> sub(xq.begin() + r0 * k, xq.begin() + (r0 + m) * k);
      const std::vector<float> want(ref.begin() + r0 * n, ref.begin() + (r0 + m) * n);
      for (ThreadPool* pool : {&pool1, &pool2}) {
        SCOPED_TRACE(testing::Message() << PathName(path) << " m=" << m << " r0=" << r0
                                        << " threads=" << pool->size());
        std::vector<float> f32;
        std::vector<uint16_t> bf16;
        RunPath(path, sub, m, c.w, *pool, &f32, &bf16);
        ExpectBitExact(want, f32, bf16, n, PathName(path));
      }
    }
  }
}

// More rows than one row block of the packed A (avx512::kPanelRowBlockBytes: 54 tiles = 378 rows
// at K = 8192): the panel GEMM's later blocks give the reference's bits, 1 and 2 threads.
TEST(Fp8GemmTest, PanelGemmOverSeveralRowBlocks) {
  if (!HaveAvx512()) GTEST_SKIP() << "no AVX-512";
  ThreadPool pool1(1), pool2(2);
  const int64_t m = 400, n = 40, k = 8192;
  const RefCase c = MakeRefCase(m, n, k, 77);
  for (ThreadPool* pool : {&pool1, &pool2}) {
    std::vector<float> f32;
    std::vector<uint16_t> bf16;
    RunPath(PathId::kAvx512Gemm, c.xq, m, c.w, *pool, &f32, &bf16);
    ExpectBitExact(c.ref, f32, bf16, n, "avx512-gemm, several row blocks");
  }
}

TEST(Fp8GemmTest, EveryFiniteCodeAndExtremeScales) {
  // Each of the 254 finite codes in every position class; scale codes over the whole ue8m0 range
  // (tiny scales give subnormal totals, which every path must round the same way).
  ThreadPool pool(2);
  const int64_t n = 96, k = 512, m = 20;
  Weights wt = RandomWeights(n, k, 99, 0, 254);
  int code = 0;
  for (auto& c : wt.codes) {
    c = static_cast<uint8_t>(code);
    code = (code + 1) % 256;
    if ((code & 0x7F) == 0x7F) code = (code + 1) % 256;
  }
  const PackedFp8Matrix w = Pack(wt);
  const std::vector<uint16_t> xq = Quantize(RandomActs(m, k, 5), m, k);
  std::vector<float> ref(m * n);
  Fp8GemmRefQuantized(xq.data(), m, k, wt.codes.data(), wt.scales.data(), n, ref.data());
  for (PathId path : AvailablePaths()) {
    SCOPED_TRACE(PathName(path));
    std::vector<float> f32;
    std::vector<uint16_t> bf16;
    RunPath(path, xq, m, w, pool, &f32, &bf16);
    ExpectBitExact(ref, f32, bf16, n, PathName(path));
  }
}

// The special-chunk masks flag exactly the chunks that hold an exponent-0 or NaN code, and the
// random weights above give both kinds of chunk.
TEST(Fp8GemmTest, SpecialChunkMaskMarksTheChunksWithSpecialCodes) {
  Weights wt = RandomWeights(100, 320, 31);
  wt.codes[5 * 320 + 70] = 0x7F;  // a NaN code
  const PackedFp8Matrix w = Pack(wt);
  int flagged = 0, clean = 0;
  for (int64_t p = 0; p < w.n_panels; ++p) {
    for (int64_t b = 0; b < w.k_blocks(); ++b) {
      for (int s = 0; s < 8; ++s) {
        for (int g = 0; g < 4; ++g) {
          bool special = false;
          for (int r = 0; r < 16; ++r) {
            const int64_t row = p * kFp8PanelRows + g * 16 + r;
            for (int kk = 0; kk < 4; ++kk) {
              const uint8_t c = row < wt.n ? wt.codes[row * wt.k + b * kFp8BlockK + s * 4 + kk] : 0;
              special |= (c & 0x78) == 0 || (c & 0x7F) == 0x7F;
            }
          }
          const bool bit = (w.PanelSpecialChunks(p)[b] >> (s * 4 + g)) & 1u;
          ASSERT_EQ(bit, special) << "panel " << p << " block " << b << " chunk " << s * 4 + g;
          (special ? flagged : clean) += 1;
        }
      }
    }
  }
  EXPECT_GT(clean, 100);
  EXPECT_GT(flagged, 100);
}

// Each of the 256 codes alone among normal codes: its chunk takes the affine decode when the code
// is normal and the LUT when it is special; the GEMV gives the reference's bits (NaN for NaN).
TEST(Fp8GemmTest, EveryCodeAloneInANormalChunk) {
  ThreadPool pool(1);
  const int64_t n = 64, k = 32;
  for (int code = 0; code < 256; ++code) {
    Weights wt = RandomWeights(n, k, 7, 120, 124);
    for (auto& c : wt.codes) c = 0x38 | (c & 0x87);  // ±(1 + m/8): normal
    const int64_t row = code % n, col = (code * 7) % k;
    wt.codes[row * k + col] = static_cast<uint8_t>(code);
    const PackedFp8Matrix w = Pack(wt);
    const std::vector<uint16_t> xq = Quantize(RandomActs(1, k, 100 + code), 1, k);
    std::vector<float> ref(n);
    Fp8GemmRefQuantized(xq.data(), 1, k, wt.codes.data(), wt.scales.data(), n, ref.data());
    for (PathId path : AvailablePaths()) {
      if (path == PathId::kAvx2) continue;  // decodes finite codes only (nan_codes)
      SCOPED_TRACE(testing::Message() << PathName(path) << " code 0x" << std::hex << code);
      std::vector<float> f32;
      std::vector<uint16_t> bf16;
      RunPath(path, xq, 1, w, pool, &f32, &bf16);
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(ref[i]) || std::isnan(f32[i])) {
          ASSERT_TRUE(std::isnan(ref[i]) && std::isnan(f32[i])) << "row " << i << " got " << f32[i];
        } else {
          ASSERT_EQ(Bits(ref[i]), Bits(f32[i])) << "row " << i;
        }
      }
    }
  }
}

TEST(Fp8GemmTest, BatchAndThreadInvariance) {
  // A row's output bits must not depend on how many rows share the call (M = 1, 8, 512: GEMV,
  // GEMV-M and panel GEMM on AVX-512) nor on the thread count.
  const int64_t n = 200, k = 640, m = 512;
  const Weights wt = RandomWeights(n, k, 42);
  const PackedFp8Matrix w = Pack(wt);
  const std::vector<uint16_t> x = RandomActs(m, k, 43);
  ThreadPool pool1(1), pool2(2);
  std::vector<float> full(m * n);
  ASSERT_TRUE(Fp8GemmF32(x.data(), m, w, full.data(), pool2).ok());
  for (ThreadPool* pool : {&pool1, &pool2}) {
    for (int64_t rows : {int64_t{1}, int64_t{8}, int64_t{37}, m}) {
      for (int64_t r0 = 0; r0 + rows <= m; r0 += (rows == 1 ? 61 : rows)) {
        std::vector<float> part(rows * n);
        ASSERT_TRUE(Fp8GemmF32(x.data() + r0 * k, rows, w, part.data(), *pool).ok());
        for (int64_t i = 0; i < rows * n; ++i) {
          ASSERT_EQ(Bits(full[r0 * n + i]), Bits(part[i]))
              << "rows=" << rows << " r0=" << r0 << " threads=" << pool->size() << " at " << i;
        }
      }
    }
  }
  // And the full result equals the reference from the unpacked tensors.
  std::vector<float> ref(m * n);
  Fp8GemmRef(x.data(), 64, k, wt.codes.data(), wt.scales.data(), n, ref.data());
  for (int64_t i = 0; i < 64 * n; ++i) ASSERT_EQ(Bits(ref[i]), Bits(full[i])) << i;
}

TEST(Fp8GemmTest, PublicEntryPointsAndStrides) {
  ThreadPool pool(2);
  const int64_t n = 77, k = 96, m = 6, ldx = 130, ldo = 90;
  const Weights wt = RandomWeights(n, k, 3);
  const PackedFp8Matrix w = Pack(wt);
  const std::vector<uint16_t> x = RandomActs(m, k, 4);
  std::vector<uint16_t> xs(m * ldx, 0x7FC0);  // strided copy; padding is NaN and must be ignored
  for (int64_t i = 0; i < m; ++i) std::memcpy(&xs[i * ldx], &x[i * k], k * 2);
  std::vector<float> ref(m * n);
  Fp8GemmRef(x.data(), m, k, wt.codes.data(), wt.scales.data(), n, ref.data());

  std::vector<uint16_t> out(m * ldo, 0x1234);
  Fp8GemmParams p;
  p.x = xs.data();
  p.m = m;
  p.ldx = ldx;
  p.out = out.data();
  p.ldo = ldo;
  ASSERT_TRUE(Fp8Gemm(p, w, pool).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldo; ++j) {
      if (j < n) {
        ASSERT_EQ(out[i * ldo + j], FloatToBf16(ref[i * n + j])) << i << "," << j;
      } else {
        ASSERT_EQ(out[i * ldo + j], 0x1234) << "wrote past n at " << i << "," << j;
      }
    }
  }
  // Pre-quantized input gives the same result.
  const std::vector<uint16_t> xq = Quantize(x, m, k);
  std::vector<float> f32(m * n);
  Fp8GemmParams q;
  q.x = xq.data();
  q.m = m;
  q.ldx = k;
  q.x_kind = ActKind::kQuantizedBf16;
  q.out = f32.data();
  q.ldo = n;
  q.out_dtype = OutDtype::kF32;
  ASSERT_TRUE(Fp8Gemm(q, w, pool).ok());
  for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(Bits(ref[i]), Bits(f32[i])) << i;

  p.ldx = k - 1;
  EXPECT_FALSE(Fp8Gemm(p, w, pool).ok());
  p.ldx = ldx;
  p.out = nullptr;
  EXPECT_FALSE(Fp8Gemm(p, w, pool).ok());
}

TEST(Fp8GemmTest, PackRejectsBadInput) {
  const Weights wt = RandomWeights(40, 64, 8);
  EXPECT_FALSE(PackFp8Matrix(wt.codes.data(), wt.scales.data(), 40, 48).ok());
  EXPECT_FALSE(PackFp8Matrix(wt.codes.data(), wt.scales.data(), 0, 64).ok());
  EXPECT_FALSE(PackFp8Matrix(nullptr, wt.scales.data(), 40, 64).ok());
  Weights bad = wt;
  bad.scales[3] = 0xFF;
  EXPECT_FALSE(PackFp8Matrix(bad.codes.data(), bad.scales.data(), 40, 64).ok());
}

TEST(Fp8GemmTest, CloseToFloat64DequantizedProduct) {
  // |out - Σ xq·w·sw (float64)| <= (32 + K/32 + 2)·2^-24 · Σ|xq·w·sw|: each block sum adds up to
  // 32 roundings of at most 2^-24 relative to the running |terms|, then K/32 FMA roundings.
  ThreadPool pool(2);
  const int64_t n = 150, k = 1024, m = 9;
  const Weights wt = RandomWeights(n, k, 21);
  const PackedFp8Matrix w = Pack(wt);
  const std::vector<uint16_t> x = RandomActs(m, k, 22);
  const std::vector<uint16_t> xq = Quantize(x, m, k);
  std::vector<float> out(m * n);
  ASSERT_TRUE(Fp8GemmF32(x.data(), m, w, out.data(), pool).ok());
  const double bound = (32.0 + k / 32 + 2) * std::ldexp(1.0, -24);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double t = static_cast<double>(Bf16ToFloat(xq[i * k + c])) *
                         E4m3ToFloat(wt.codes[r * k + c]) *
                         Ue8m0ToFloat(wt.scales[(r / 32) * (k / 32) + c / 32]);
        sum += t;
        abs_sum += std::fabs(t);
      }
      ASSERT_LE(std::fabs(out[i * n + r] - sum), bound * abs_sum + 1e-300)
          << "(" << i << ", " << r << ") got " << out[i * n + r] << " want " << sum;
    }
  }
}

// Fp8GemmMany gives every job exactly Fp8Gemm's bits: jobs of 1, 5 and 64 rows (one shared
// region on AVX-512), 100 rows (panel GEMM) and raw activations, strided outputs into one buffer.
TEST(Fp8GemmTest, ManyMatchesOneByOne) {
  ThreadPool pool(2);
  const int64_t k = 96;
  const int64_t ms[] = {1, 5, 64, 100, 3};
  const int64_t ns[] = {77, 64, 130, 40, 33};
  std::vector<Weights> wts;
  std::vector<PackedFp8Matrix> ws;
  std::vector<std::vector<uint16_t>> xs;
  for (int j = 0; j < 5; ++j) {
    wts.push_back(RandomWeights(ns[j], k, 50 + j));
    ws.push_back(Pack(wts.back()));
    const std::vector<uint16_t> x = RandomActs(ms[j], k, 60 + j);
    xs.push_back(j == 4 ? x : Quantize(x, ms[j], k));
  }
  const int64_t ldo = 800;  // each job writes columns [160j, 160j + n) of shared rows
  std::vector<float> want(100 * ldo, 1.5f), got(100 * ldo, 1.5f);
  std::vector<Fp8GemmJob> jobs(5);
  for (int j = 0; j < 5; ++j) {
    Fp8GemmParams& p = jobs[j].params;
    jobs[j].w = &ws[j];
    p.x = xs[j].data();
    p.m = ms[j];
    p.ldx = k;
    p.x_kind = j == 4 ? ActKind::kRawBf16 : ActKind::kQuantizedBf16;
    p.ldo = ldo;
    p.out_dtype = OutDtype::kF32;
    p.out = want.data() + 160 * j;
    ASSERT_TRUE(Fp8Gemm(p, ws[j], pool).ok());
    p.out = got.data() + 160 * j;
  }
  ASSERT_TRUE(Fp8GemmMany(jobs, pool).ok());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(Bits(want[i]), Bits(got[i])) << i;
  jobs[2].params.ldo = 10;  // < n
  EXPECT_FALSE(Fp8GemmMany(jobs, pool).ok());
}

// ---- AVX2 paths (GEMV for m = 1, register-blocked GEMM otherwise) -----------------------------

// Every code value 0..255 in turn down each row (NaN codes included when with_nan).
Weights CyclingCodes(int64_t n, int64_t k, uint32_t seed, bool with_nan) {
  Weights wt = RandomWeights(n, k, seed, 100, 140);
  int code = 0;
  for (auto& c : wt.codes) {
    if (!with_nan && (code & 0x7F) == 0x7F) code = (code + 1) % 256;
    c = static_cast<uint8_t>(code);
    code = (code + 1) % 256;
  }
  return wt;
}

// Fp8GemmAvx2 on xq copied into rows of stride ldx (NaN padding), out rows of stride ldo
// (sentinel padding); compares both dtypes with the reference bit for bit (NaN against NaN when
// the weights hold NaN codes) and checks the padding is untouched.
void CheckAvx2(const Weights& wt, int64_t m, int64_t ldx, int64_t ldo, uint32_t seed,
               ThreadPool& pool) {
  const int64_t n = wt.n, k = wt.k;
  const PackedFp8Matrix w = Pack(wt);
  const std::vector<uint16_t> xq = Quantize(RandomActs(m, k, seed), m, k);
  std::vector<float> ref(m * n);
  Fp8GemmRefQuantized(xq.data(), m, k, wt.codes.data(), wt.scales.data(), n, ref.data());
  std::vector<uint16_t> xs(m * ldx, 0x7FC0);
  for (int64_t i = 0; i < m; ++i) std::memcpy(&xs[i * ldx], &xq[i * k], k * 2);
  std::vector<float> f32(m * ldo, 1.25f);
  std::vector<uint16_t> bf16(m * ldo, 0x1234);
  fp8_internal::Fp8GemmAvx2(xs.data(), m, ldx, w, OutView{f32.data(), ldo, OutDtype::kF32}, pool);
  fp8_internal::Fp8GemmAvx2(xs.data(), m, ldx, w, OutView{bf16.data(), ldo, OutDtype::kBf16}, pool);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldo; ++j) {
      const float got = f32[i * ldo + j];
      const uint16_t got16 = bf16[i * ldo + j];
      if (j >= n) {
        ASSERT_EQ(Bits(got), Bits(1.25f)) << "fp32 written past n at (" << i << ", " << j << ")";
        ASSERT_EQ(got16, 0x1234) << "bf16 written past n at (" << i << ", " << j << ")";
        continue;
      }
      const float want = ref[i * n + j];
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << "(" << i << ", " << j << ")";
        ASSERT_TRUE(std::isnan(Bf16ToFloat(got16))) << "(" << i << ", " << j << ")";
        continue;
      }
      ASSERT_EQ(Bits(want), Bits(got))
          << "fp32 (" << i << ", " << j << ") ref " << want << " got " << got;
      ASSERT_EQ(FloatToBf16(want), got16) << "bf16 (" << i << ", " << j << ")";
    }
  }
}

TEST(Fp8GemmAvx2Test, OddShapesStridesBitExact) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool1(1), pool2(2);
  struct Nk {
    int64_t n, k;
  };
  // n below, at and past panel multiples of 64; k of 1, 3 and 10 blocks.
  const Nk nks[] = {{1, 32}, {37, 96}, {64, 32}, {130, 320}};
  uint32_t seed = 300;
  for (int64_t m : {1, 2, 3, 7, 8, 9, 33, 200}) {
    for (const Nk& nk : nks) {
      const Weights wt = CyclingCodes(nk.n, nk.k, seed++, /*with_nan=*/false);
      for (ThreadPool* pool : {&pool1, &pool2}) {
        SCOPED_TRACE(testing::Message()
                     << "m=" << m << " n=" << nk.n << " k=" << nk.k << " threads=" << pool->size());
        CheckAvx2(wt, m, nk.k + 40, nk.n + 9, seed, *pool);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(Fp8GemmAvx2Test, RandomCodesSeveralRowBlocksAndGroupsBitExact) {
  // 200 rows = three row blocks of the GEMM's units (96 rows each); 400 rows = two row groups
  // (384 rows packed at a time); random codes and scales.
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  for (int64_t m : {1, 200, 400}) {
    SCOPED_TRACE(testing::Message() << "m=" << m);
    CheckAvx2(RandomWeights(150, 1024, 400 + static_cast<uint32_t>(m)), m, 1024, 150, 401, pool);
  }
}

TEST(Fp8GemmAvx2Test, NanWeightCodesGiveNan) {
  // NaN codes are outside what the AVX2 decode handles: Pack flags the matrix and the AVX2 entry
  // sends it to the scalar path, so outputs still follow the reference (NaN where it is NaN).
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  const Weights wt = CyclingCodes(70, 64, 500, /*with_nan=*/true);
  ASSERT_TRUE(Pack(wt).nan_codes);
  ASSERT_FALSE(Pack(CyclingCodes(70, 64, 500, /*with_nan=*/false)).nan_codes);
  for (int64_t m : {1, 9}) CheckAvx2(wt, m, 64, 70, 501, pool);
}

TEST(Fp8GemmAvx2Test, ManySmallJobsMatchOneByOne) {
  // Fp8GemmMany on AVX2: quantized jobs of 1..64 rows share one region (GEMV for m = 1).
  if (GetCpuFeatures().BestLevel() != CpuLevel::kAvx2) GTEST_SKIP() << "not an AVX2-level CPU";
  ThreadPool pool(2);
  const int64_t k = 160;
  const int64_t ms[] = {1, 1, 7, 64};
  const int64_t ns[] = {200, 64, 33, 100};
  std::vector<PackedFp8Matrix> ws;
  std::vector<std::vector<uint16_t>> xs;
  for (int j = 0; j < 4; ++j) {
    ws.push_back(Pack(RandomWeights(ns[j], k, 600 + j)));
    xs.push_back(Quantize(RandomActs(ms[j], k, 610 + j), ms[j], k));
  }
  const int64_t ldo = 1000;
  std::vector<uint16_t> want(64 * ldo, 7), got(64 * ldo, 7);
  std::vector<Fp8GemmJob> jobs(4);
  for (int j = 0; j < 4; ++j) {
    Fp8GemmParams& p = jobs[j].params;
    jobs[j].w = &ws[j];
    p.x = xs[j].data();
    p.m = ms[j];
    p.ldx = k;
    p.x_kind = ActKind::kQuantizedBf16;
    p.ldo = ldo;
    p.out = want.data() + 250 * j;
    ASSERT_TRUE(Fp8Gemm(p, ws[j], pool).ok());
    p.out = got.data() + 250 * j;
  }
  ASSERT_TRUE(Fp8GemmMany(jobs, pool).ok());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(want[i], got[i]) << i;
}

}  // namespace
}  // namespace deepinfer::kernels
