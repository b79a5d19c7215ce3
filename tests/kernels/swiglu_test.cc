// SwiGLU with the V4.1 clamps against a double-precision formula.
#include "kernels/cpu/swiglu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"

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

}  // namespace
}  // namespace deepinfer::kernels
