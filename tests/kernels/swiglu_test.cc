// SwiGLU with the V4.1 clamps against a double-precision formula.
#include "kernels/cpu/swiglu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"

namespace deepinfer::kernels {
namespace {

double Expected(double g, double u, double limit, double w) {
  if (limit > 0) {
    u = std::clamp(u, -limit, limit);
    g = std::min(g, limit);
  }
  return w * (g / (1.0 + std::exp(-g))) * u;
}

TEST(SwiGluTest, ClampsGateAboveAndUpBothSides) {
  const float L = 10.0f;
  // gate 40 -> 10, up 25 -> 10
  EXPECT_NEAR(SwiGluElement(40.0f, 25.0f, L, nullptr), Expected(10, 10, 10, 1), 1e-4);
  // gate -40 is NOT clamped from below: silu(-40) ~ -1.7e-16
  EXPECT_NEAR(SwiGluElement(-40.0f, 1.0f, L, nullptr), -40.0 / (1.0 + std::exp(40.0)), 1e-20);
  // up -25 -> -10
  EXPECT_NEAR(SwiGluElement(2.0f, -25.0f, L, nullptr), Expected(2, -10, 10, 1), 1e-5);
  // limit 0 disables the clamps
  EXPECT_NEAR(SwiGluElement(12.0f, 25.0f, 0.0f, nullptr), Expected(12, 25, 0, 1), 1e-3);
}

TEST(SwiGluTest, RowsWithRoutingWeightMatchDouble) {
  const int64_t rows = 3, n = 2304;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 6.0f);
  std::vector<uint16_t> g(rows * n), u(rows * n), out(rows * n);
  for (auto& v : g) v = FloatToBf16(dist(rng));
  for (auto& v : u) v = FloatToBf16(dist(rng));
  const float w[rows] = {0.75f, 1.5f, 0.01f};
  SwiGluParams p;
  p.gate = g.data();
  p.up = u.data();
  p.gate_stride = p.up_stride = p.out_stride = n;
  p.row_weight = w;
  p.out = out.data();
  p.n_rows = rows;
  p.n = n;
  p.limit = 10.0f;
  SwiGlu(p);
  int clamped = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      const double gi = Bf16ToFloat(g[r * n + i]), ui = Bf16ToFloat(u[r * n + i]);
      clamped += gi > 10 || std::fabs(ui) > 10;
      const double want = Expected(gi, ui, 10.0, w[r]);
      EXPECT_NEAR(Bf16ToFloat(out[r * n + i]), want, std::fabs(want) * 0x1p-8 + 1e-30);
    }
  }
  EXPECT_GT(clamped, 100);  // the data does exercise the clamps
}

// The vector kernels give SwiGluRef's bits: clamp edges (exactly ±limit, beyond it, NaN, ±inf),
// signed zeros, subnormals, row strides, K tails, with and without routing weights and clamps.
TEST(SwiGluTest, VectorPathsBitIdenticalToReference) {
  std::vector<std::pair<const char*, void (*)(const SwiGluParams&)>> paths;
  if (GetCpuFeatures().BestLevel() >= CpuLevel::kAvx2) paths.push_back({"avx2", SwiGluAvx2});
  if (GetCpuFeatures().BestLevel() == CpuLevel::kAvx512) paths.push_back({"avx512", SwiGluAvx512});
  if (paths.empty()) GTEST_SKIP() << "no AVX2 here";
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 8.0f);
  const float specials[] = {10.0f,  -10.0f,  10.000001f, -10.000001f, 0.0f, -0.0f,
                            1e-40f, -1e-40f, INFINITY,   -INFINITY,   NAN,  -NAN,
                            88.0f,  -88.0f,  105.0f,     -105.0f};
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 2304}) {
    const int64_t rows = 5, stride = n + 7;
    std::vector<uint16_t> g(rows * stride), u(rows * stride);
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = FloatToBf16(i % 5 == 0 ? specials[(i / 5) % 16] : dist(rng));
      u[i] = FloatToBf16(i % 7 == 0 ? specials[(i / 7) % 16] : dist(rng));
    }
    const float w[rows] = {0.75f, -1.5f, 1e-30f, 3.0f, 0.0f};
    for (float limit : {10.0f, 0.0f}) {
      for (const float* weight : {static_cast<const float*>(nullptr), &w[0]}) {
        SwiGluParams p;
        p.gate = g.data();
        p.up = u.data() + 3;
        p.gate_stride = p.up_stride = stride;
        p.row_weight = weight;
        p.n_rows = rows - 1;  // the last row's up would run past the buffer
        p.n = n;
        p.out_stride = n + 1;
        p.limit = limit;
        std::vector<uint16_t> want(rows * (n + 1), 0xABCD), got(rows * (n + 1), 0xABCD);
        p.out = want.data();
        SwiGluRef(p);
        for (const auto& [name, run] : paths) {
          std::fill(got.begin(), got.end(), 0xABCD);
          p.out = got.data();
          run(p);
          ASSERT_EQ(got, want) << name << " n " << n << " limit " << limit << " weight "
                               << (weight != nullptr);
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::kernels
