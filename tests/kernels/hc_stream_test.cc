// Hyper-connection stream passes (collapse, post) and the RMS factor: the scalar references
// against a direct double-free restatement of the formulas, AVX-512 vs scalar bit for bit
// (column tails, hc 1..4, Inf/NaN and tiny values in the stream).
#include "kernels/cpu/hc_stream.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "kernels/cpu/rmsnorm.h"
#include "level_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::RandomBf16;

using test_util::HaveAvx2;
using test_util::HaveAvx512;

std::vector<float> RandomF32(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& f : v) f = u(rng);
  return v;
}

// A stream with a few special values sprinkled in (each pass must treat them as the scalar does).
std::vector<uint16_t> Stream(size_t n, uint32_t seed) {
  std::vector<uint16_t> x = RandomBf16(n, seed, 4.0f);
  for (size_t i = 7; i < n; i += 611) x[i] = FloatToBf16(std::numeric_limits<float>::infinity());
  for (size_t i = 11; i < n; i += 733) x[i] = 0x7FC1;  // NaN
  for (size_t i = 13; i < n; i += 97) x[i] = FloatToBf16(1e-38f);
  return x;
}

TEST(HcStreamTest, CollapseReferenceIsTheFormula) {
  const HcStreamShape s{4, 40};
  const int64_t rows = 3;
  const auto x = RandomBf16(rows * s.hc * s.dim, 1, 2.0f);
  const auto pre = RandomF32(rows * s.hc, 2, 0.0f, 1.0f);
  std::vector<uint16_t> y(rows * s.dim);
  HcCollapseRowsRef(s, x.data(), pre.data(), rows, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t d = 0; d < s.dim; ++d) {
      float acc = pre[r * 4] * Bf16ToFloat(x[(r * 4) * s.dim + d]);
      acc = acc + pre[r * 4 + 1] * Bf16ToFloat(x[(r * 4 + 1) * s.dim + d]);
      acc = acc + pre[r * 4 + 2] * Bf16ToFloat(x[(r * 4 + 2) * s.dim + d]);
      acc = acc + pre[r * 4 + 3] * Bf16ToFloat(x[(r * 4 + 3) * s.dim + d]);
      ASSERT_EQ(y[r * s.dim + d], FloatToBf16(acc)) << r << " " << d;
    }
  }
}

TEST(HcStreamTest, PostReferenceIsTheFormula) {
  const HcStreamShape s{2, 24};
  const int64_t rows = 2;
  const auto x = RandomBf16(rows * s.hc * s.dim, 3, 2.0f);
  const auto y = RandomBf16(rows * s.dim, 4, 2.0f);
  const auto post = RandomF32(rows * 2, 5, 0.0f, 2.0f);
  const auto comb = RandomF32(rows * 4, 6, 0.0f, 1.0f);
  std::vector<uint16_t> out(rows * s.hc * s.dim);
  HcPostRowsRef(s, y.data(), x.data(), post.data(), comb.data(), rows, out.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < 2; ++k) {
      for (int64_t d = 0; d < s.dim; ++d) {
        const float x0 = Bf16ToFloat(x[(r * 2) * s.dim + d]);
        const float x1 = Bf16ToFloat(x[(r * 2 + 1) * s.dim + d]);
        const float acc = comb[r * 4 + k] * x0 + comb[r * 4 + 2 + k] * x1;
        const float want = post[r * 2 + k] * Bf16ToFloat(y[r * s.dim + d]) + acc;
        ASSERT_EQ(out[(r * 2 + k) * s.dim + d], FloatToBf16(want)) << r << " " << k << " " << d;
      }
    }
  }
}

TEST(HcStreamTest, VectorPathsMatchReferenceBitForBit) {
  struct Path {
    const char* name;
    decltype(&HcCollapseRowsRef) collapse;
    decltype(&HcPostRowsRef) post;
  };
  std::vector<Path> paths;
  if (HaveAvx2()) paths.push_back({"avx2", HcCollapseRowsAvx2, HcPostRowsAvx2});
  if (HaveAvx512()) paths.push_back({"avx512", HcCollapseRowsAvx512, HcPostRowsAvx512});
  if (paths.empty()) GTEST_SKIP() << "no AVX2";
  for (int hc : {1, 2, 3, 4}) {
    for (int64_t dim : {int64_t{5}, int64_t{16}, int64_t{37}, int64_t{5120}}) {
      const HcStreamShape s{hc, dim};
      const int64_t rows = 5;
      const auto x = Stream(rows * hc * dim, 10 + hc);
      const auto y = Stream(rows * dim, 20 + hc);
      const auto pre = RandomF32(rows * hc, 30, -1.0f, 1.0f);
      const auto post = RandomF32(rows * hc, 31, 0.0f, 2.0f);
      const auto comb = RandomF32(rows * hc * hc, 32, 0.0f, 1.0f);
      // 0xABCD fillers past each row check that no pass writes outside its rows and columns.
      std::vector<uint16_t> c_ref(rows * dim + 8, 0xABCD);
      HcCollapseRowsRef(s, x.data(), pre.data(), rows, c_ref.data());
      std::vector<uint16_t> p_ref(rows * hc * dim + 8, 0xABCD);
      HcPostRowsRef(s, y.data(), x.data(), post.data(), comb.data(), rows, p_ref.data());
      for (const Path& path : paths) {
        std::vector<uint16_t> c_vec(rows * dim + 8, 0xABCD);
        path.collapse(s, x.data(), pre.data(), rows, c_vec.data());
        ASSERT_EQ(c_vec, c_ref) << path.name << " collapse hc " << hc << " dim " << dim;
        std::vector<uint16_t> p_vec(rows * hc * dim + 8, 0xABCD);
        path.post(s, y.data(), x.data(), post.data(), comb.data(), rows, p_vec.data());
        ASSERT_EQ(p_vec, p_ref) << path.name << " post hc " << hc << " dim " << dim;
      }
    }
  }
}

TEST(HcStreamTest, RmsFactorVectorPathsMatchReference) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  for (int64_t dim : {int64_t{1}, int64_t{63}, int64_t{64}, int64_t{100}, int64_t{20480}}) {
    const auto x = RandomBf16(dim, 40 + static_cast<uint32_t>(dim), 3.0f);
    const float want = RmsNormFactorRef(x.data(), dim, 1e-20f);
    if (HaveAvx512()) {
      EXPECT_EQ(std::bit_cast<uint32_t>(RmsNormFactorAvx512(x.data(), dim, 1e-20f)),
                std::bit_cast<uint32_t>(want))
          << dim;
    }
    if (HaveAvx2()) {
      EXPECT_EQ(std::bit_cast<uint32_t>(RmsNormFactorAvx2(x.data(), dim, 1e-20f)),
                std::bit_cast<uint32_t>(want))
          << dim;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(RmsNormFactor(x.data(), dim, 1e-20f)),
              std::bit_cast<uint32_t>(want));
  }
}

}  // namespace
}  // namespace deepinfer::kernels
