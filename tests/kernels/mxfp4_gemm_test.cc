// MXFP4 GEMM: every CPU level against the scalar reference (bit for bit), the reference against a
// float64 dequantized product, batch and thread invariance, packing errors and w1|w3 fusion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "level_test_util.h"
#include "mxfp4_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::AvailableLevels;
using test_util::OutputBits;

using test_util::Mxfp4Weights;

StatusOr<PackedMxfp4Matrix> PackOne(const Mxfp4Weights& w) {
  const Mxfp4Source src = w.source();
  return PackedMxfp4Matrix::Pack({&src, 1}, w.k);
}

// m rows of k quantizer outputs (bf16 q·s) from N(0, sigma) inputs with occasional outliers.
std::vector<uint16_t> RandomActivations(int64_t m, int64_t k, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<uint16_t> x(m * k), xq(m * k);
  for (int64_t i = 0; i < m * k; ++i) {
    float v = nd(rng);
    if (i % 97 == 5) v *= 300.0f;
    if (i % 89 == 3) v *= 1e-6f;
    x[i] = FloatToBf16(v);
  }
  for (int64_t r = 0; r < m; ++r) QuantizeActScaledBf16Ref(x.data() + r * k, k, xq.data() + r * k);
  return xq;
}

std::vector<uint8_t> RunRef(const Mxfp4Weights& w, const std::vector<uint16_t>& xq, int64_t m,
                            DType dt) {
  std::vector<uint8_t> out(m * w.n * (dt == DType::kF32 ? 4 : 2), 0xAB);
  Mxfp4GemmRef(w.weight.data(), w.scale.data(), w.n, w.k, xq.data(), m, w.k, out.data(), dt, w.n);
  return out;
}

std::vector<uint8_t> RunKernel(CpuLevel level, const PackedMxfp4View& v,
                               const std::vector<uint16_t>& xq, int64_t m, DType dt,
                               ThreadPool* pool) {
  std::vector<uint8_t> out(m * v.n * (dt == DType::kF32 ? 4 : 2), 0xAB);
  Mxfp4GemmAt(level, v, xq.data(), m, v.k, out.data(), dt, v.n, pool);
  return out;
}

// Float64 dequantized product: value and sum of |terms| (for a relative bound).
void Dequant64(const Mxfp4Weights& w, const uint16_t* x, int64_t r, double* value, double* mag) {
  *value = 0.0;
  *mag = 0.0;
  for (int64_t k = 0; k < w.k; ++k) {
    const uint8_t byte = w.weight[r * w.k / 2 + k / 2];
    const double wv = E2m1ToFloat((k % 2) ? byte >> 4 : byte & 0xF) *
                      static_cast<double>(Ue8m0ToFloat(w.scale[r * w.k / 32 + k / 32]));
    const double term = wv * Bf16ToFloat(x[k]);
    *value += term;
    *mag += std::fabs(term);
  }
}

TEST(Mxfp4Gemm, ReferenceMatchesFloat64Dequant) {
  const int64_t n = 37, k = 320, m = 3;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 1);
  const std::vector<uint16_t> xq = RandomActivations(m, k, 2);
  const std::vector<uint8_t> out = RunRef(w, xq, m, DType::kF32);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double want, mag;
      Dequant64(w, xq.data() + i * k, r, &want, &mag);
      float got;
      std::memcpy(&got, out.data() + (i * n + r) * 4, 4);
      // fp32 sums of exact products: at most ~k roundings of 2^-24 relative to sum |terms|.
      EXPECT_NEAR(got, want, 1e-6 * mag + 1e-30) << "row " << i << " col " << r;
    }
  }
}

TEST(Mxfp4Gemm, AllLevelsBitIdenticalToReference) {
  ThreadPool pool2(2);
  for (int64_t n : {1, 17, 64, 100, 130, 192}) {
    for (int64_t k : {32, 96, 256}) {
      const Mxfp4Weights w =
          test_util::RandomMxfp4Weights(n, k, static_cast<uint32_t>(n * 1000 + k));
      auto packed = PackOne(w);
      ASSERT_TRUE(packed.ok()) << packed.status().ToString();
      for (int64_t m : {1, 2, 3, 5, 8, 9, 13}) {
        const std::vector<uint16_t> xq = RandomActivations(m, k, static_cast<uint32_t>(m + n));
        for (DType dt : {DType::kF32, DType::kBF16}) {
          const auto want = OutputBits(RunRef(w, xq, m, dt), dt);
          for (CpuLevel level : AvailableLevels()) {
            for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
              const auto got = OutputBits(RunKernel(level, packed->view(), xq, m, dt, pool), dt);
              ASSERT_EQ(got, want) << "n " << n << " k " << k << " m " << m << " level "
                                   << CpuLevelName(level) << " bf16 " << (dt == DType::kBF16);
            }
          }
        }
      }
    }
  }
}

// One-hot activations read back single weights: every nibble, at even and odd k, exactly.
TEST(Mxfp4Gemm, EveryNibbleDecodesExactly) {
  const int64_t n = 16, k = 64;
  Mxfp4Weights w{n, k, std::vector<uint8_t>(n * k / 2), std::vector<uint8_t>(n * k / 32, 127)};
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < k / 2; ++j) w.weight[r * k / 2 + j] = PackE2m1Pair(r, (r + j) & 0xF);
  }
  auto packed = PackOne(w);
  ASSERT_TRUE(packed.ok());
  for (CpuLevel level : AvailableLevels()) {
    for (int64_t kk = 0; kk < k; ++kk) {  // every nibble position of a chunk's dwords
      std::vector<uint16_t> x(k, 0);
      x[kk] = FloatToBf16(1.0f);
      const auto out = RunKernel(level, packed->view(), x, 1, DType::kF32, nullptr);
      for (int64_t r = 0; r < n; ++r) {
        const uint8_t nib = (kk % 2) ? (r + kk / 2) & 0xF : r;
        float got;
        std::memcpy(&got, out.data() + r * 4, 4);
        // -0 weights give +0 (0 + -0 in the block sum), so compare values, not bits, at zero.
        EXPECT_EQ(got, E2m1ToFloat(nib)) << "nibble " << int(nib) << " k " << kk;
      }
    }
  }
}

// The packed chunk's dword of a row (mxfp4_gemm.h): even elements of k-pairs 0..3 in the low
// word's nibbles, odd ones in the high word's; and back.
TEST(Mxfp4Gemm, ChunkDwordLayout) {
  // Checkpoint bytes (even low nibble, odd high): pairs (1,2), (3,4), (5,6), (7,8).
  const uint8_t bytes[4] = {0x21, 0x43, 0x65, 0x87};
  EXPECT_EQ(Mxfp4ChunkDword(bytes), 0x86427531u);
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i) {
    uint8_t b[4];
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
    const uint32_t d = Mxfp4ChunkDword(b);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(Mxfp4CheckpointByte(d, j), b[j]);
  }
}

// Scale codes at both ends of the range: subnormal 2^-127, huge 2^127 (inf outputs included).
TEST(Mxfp4Gemm, ExtremeScalesBitIdentical) {
  const int64_t n = 70, k = 128, m = 3;
  Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 7);
  const uint8_t codes[] = {0, 1, 2, 100, 126, 127, 128, 200, 253, 254};
  for (size_t i = 0; i < w.scale.size(); ++i) w.scale[i] = codes[(i * 7 + i / 5) % 10];
  auto packed = PackOne(w);
  ASSERT_TRUE(packed.ok());
  for (float sigma : {1.0f, 1e-3f, 1e30f}) {
    const std::vector<uint16_t> xq = RandomActivations(m, k, 8, sigma);
    for (DType dt : {DType::kF32, DType::kBF16}) {
      const auto want = OutputBits(RunRef(w, xq, m, dt), dt);
      for (CpuLevel level : AvailableLevels()) {
        EXPECT_EQ(OutputBits(RunKernel(level, packed->view(), xq, m, dt, nullptr), dt), want)
            << CpuLevelName(level) << " sigma " << sigma;
      }
    }
  }
  // With all scales 2^-127 the totals are subnormal: the bf16 output must keep them (no FTZ).
  std::fill(w.scale.begin(), w.scale.end(), 0);
  auto tiny = PackOne(w);
  const std::vector<uint16_t> xq = RandomActivations(1, k, 9, 3e-4f);
  const auto want = RunRef(w, xq, 1, DType::kBF16);
  int subnormal = 0;
  for (int64_t r = 0; r < n; ++r) {
    uint16_t b;
    std::memcpy(&b, want.data() + 2 * r, 2);
    subnormal += (b & 0x7F80) == 0 && (b & 0x7F) != 0;
  }
  EXPECT_GT(subnormal, n / 2) << "first output bits " << std::hex << (want[0] | want[1] << 8);
  for (CpuLevel level : AvailableLevels()) {
    EXPECT_EQ(RunKernel(level, tiny->view(), xq, 1, DType::kBF16, nullptr), want);
  }
}

// Row m of a batch is the same bits whatever the batch size and thread count.
// Issue 27's batch invariance, row count by row count: every M in 1..64 (the GEMV, GEMV-M and,
// from Mxfp4PanelGemmMinRows, the panel GEMM) on every level, one and two threads, both output
// types; a call's rows (at an offset that moves with M) get the reference's bits for them.
TEST(Mxfp4Gemm, EveryRowCountOneToSixtyFourOnEveryLevel) {
  const int64_t n = 72, k = 256, rows = 64;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 93);
  auto packed = PackOne(w);
  ASSERT_TRUE(packed.ok());
  const std::vector<uint16_t> xq = RandomActivations(rows, k, 94);
  ThreadPool pool1(1), pool2(2);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const size_t row_bytes = static_cast<size_t>(n) * (dt == DType::kF32 ? 4 : 2);
    const std::vector<uint8_t> ref = RunRef(w, xq, rows, dt);
    for (CpuLevel level : AvailableLevels()) {
      for (int64_t m = 1; m <= rows; ++m) {
        const int64_t r0 = (m * 5) % (rows - m + 1);
        const std::vector<uint16_t> sub(xq.begin() + r0 * k, xq.begin() + (r0 + m) * k);
        const std::vector<uint8_t> want(ref.begin() + r0 * row_bytes,
                                        ref.begin() + (r0 + m) * row_bytes);
        for (ThreadPool* pool : {&pool1, &pool2}) {
          ASSERT_EQ(OutputBits(RunKernel(level, packed->view(), sub, m, dt, pool), dt),
                    OutputBits(want, dt))
              << CpuLevelName(level) << " m " << m << " r0 " << r0 << " threads " << pool->size()
              << (dt == DType::kF32 ? " fp32" : " bf16");
        }
      }
    }
  }
}

TEST(Mxfp4Gemm, BatchAndThreadInvariance) {
  const int64_t n = 200, k = 512;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 11);
  auto packed = PackOne(w);
  ASSERT_TRUE(packed.ok());
  const std::vector<uint16_t> xq = RandomActivations(40, k, 12);
  ThreadPool pool1(1), pool2(2);
  for (CpuLevel level : AvailableLevels()) {
    const auto all =
        OutputBits(RunKernel(level, packed->view(), xq, 40, DType::kF32, &pool2), DType::kF32);
    const auto all1 =
        OutputBits(RunKernel(level, packed->view(), xq, 40, DType::kF32, &pool1), DType::kF32);
    EXPECT_EQ(all, all1);
    for (int64_t m : {1, 8}) {
      for (int64_t start : {0, 8, 31}) {
        if (start + m > 40) continue;
        const std::vector<uint16_t> sub(xq.begin() + start * k, xq.begin() + (start + m) * k);
        for (ThreadPool* pool : {&pool1, &pool2}) {
          const auto got =
              OutputBits(RunKernel(level, packed->view(), sub, m, DType::kF32, pool), DType::kF32);
          const std::vector<uint32_t> want(all.begin() + start * n, all.begin() + (start + m) * n);
          EXPECT_EQ(got, want) << CpuLevelName(level) << " m " << m << " start " << start;
        }
      }
    }
  }
}

TEST(Mxfp4Gemm, FusedW1W3IsConcatenation) {
  const int64_t inter = 96, k = 256, m = 5;
  const Mxfp4Weights w1 = test_util::RandomMxfp4Weights(inter, k, 21),
                     w3 = test_util::RandomMxfp4Weights(inter, k, 22);
  auto fused = PackedMxfp4Matrix::PackFused(w1.source(), w3.source(), k);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->n(), 2 * inter);
  const std::vector<uint16_t> xq = RandomActivations(m, k, 23);
  const auto out = RunKernel(ActiveCpuLevel(), fused->view(), xq, m, DType::kBF16, nullptr);
  const auto g = RunRef(w1, xq, m, DType::kBF16), u = RunRef(w3, xq, m, DType::kBF16);
  for (int64_t i = 0; i < m; ++i) {
    EXPECT_EQ(0, std::memcmp(out.data() + i * 2 * inter * 2, g.data() + i * inter * 2, inter * 2));
    EXPECT_EQ(0, std::memcmp(out.data() + (i * 2 * inter + inter) * 2, u.data() + i * inter * 2,
                             inter * 2));
  }
}

TEST(Mxfp4Gemm, StridedRowsAndPackInto) {
  const int64_t n = 80, k = 64, m = 4, ldx = k + 32, ldo = n + 5;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 31);
  std::vector<uint8_t> buf(PackedMxfp4Bytes(n, k) + 64);
  uint8_t* aligned =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63});
  const Mxfp4Source src = w.source();
  ASSERT_TRUE(PackMxfp4Into({&src, 1}, k, aligned).ok());
  const std::vector<uint16_t> dense = RandomActivations(m, k, 32);
  std::vector<uint16_t> xs(m * ldx, 0x7FC0);  // NaN in the gaps: must never be read
  for (int64_t i = 0; i < m; ++i) std::copy_n(dense.data() + i * k, k, xs.data() + i * ldx);
  const auto want = OutputBits(RunRef(w, dense, m, DType::kF32), DType::kF32);
  for (CpuLevel level : AvailableLevels()) {
    std::vector<float> out(m * ldo, -1.0f);
    Mxfp4GemmAt(level, PackedMxfp4View{aligned, n, k}, xs.data(), m, ldx, out.data(), DType::kF32,
                ldo, nullptr);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < ldo; ++r) {
        uint32_t bits;
        std::memcpy(&bits, &out[i * ldo + r], 4);
        if (r < n) {
          EXPECT_EQ(bits, want[i * n + r]);
        } else {
          EXPECT_EQ(out[i * ldo + r], -1.0f) << "wrote past n";
        }
      }
    }
  }
}

TEST(Mxfp4Gemm, PackRejectsBadInput) {
  Mxfp4Weights w = test_util::RandomMxfp4Weights(4, 64, 41);
  const Mxfp4Source src = w.source();
  EXPECT_FALSE(PackedMxfp4Matrix::Pack({&src, 1}, 48).ok());
  EXPECT_FALSE(PackedMxfp4Matrix::Pack({&src, 1}, 0).ok());
  w.scale[5] = 0xFF;
  const auto bad = PackOne(w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("NaN"), std::string::npos);
  Mxfp4Source empty{nullptr, nullptr, 3};
  EXPECT_FALSE(PackedMxfp4Matrix::Pack({&empty, 1}, 64).ok());
}

}  // namespace
}  // namespace deepinfer::kernels
