#include "kernels/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/bf16.h"
#include "core/check.h"

namespace deepinfer::kernels {

YarnBand ComputeYarnBand(const RopeConfig& c) {
  const double d = c.rope_dim;
  auto corr = [&](double rotations) {
    return d *
           std::log(static_cast<double>(c.original_seq_len) /
                    (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(c.theta));
  };
  YarnBand b;
  b.low = std::max(static_cast<int>(std::floor(corr(c.beta_fast))), 0);
  b.high = std::min(static_cast<int>(std::ceil(corr(c.beta_slow))), c.rope_dim - 1);
  return b;
}

std::vector<float> BuildRopeFrequencies(const RopeConfig& c) {
  CHECK(c.rope_dim > 0 && c.rope_dim % 2 == 0) << "rope_dim must be even, got " << c.rope_dim;
  const int n = c.rope_dim / 2;
  std::vector<float> f(n);
  for (int i = 0; i < n; ++i) {
    // torch: base ** (arange(0, d, 2, fp32) / d) in fp32, then 1.0 / that in fp32. The exponent
    // 2i/d is exact in fp32 for the sizes used; pow is evaluated in double and rounded once.
    const float e = static_cast<float>(2 * i) / static_cast<float>(c.rope_dim);
    const float p = static_cast<float>(std::pow(c.theta, static_cast<double>(e)));
    f[i] = 1.0f / p;
  }
  if (c.original_seq_len > 0) {
    const YarnBand b = ComputeYarnBand(c);
    const float denom = static_cast<float>(std::max(static_cast<double>(b.high - b.low), 1e-3));
    const float factor = static_cast<float>(c.factor);
    for (int i = 0; i < n; ++i) {
      float ramp = (static_cast<float>(i) - static_cast<float>(b.low)) / denom;
      ramp = std::clamp(ramp, 0.0f, 1.0f);
      const float smooth = 1.0f - ramp;
      const float scaled = f[i] / factor * (1.0f - smooth);
      const float kept = f[i] * smooth;
      f[i] = scaled + kept;
    }
  }
  return f;
}

void RopeCosSin(const float* freqs, int n_pairs, int64_t pos, float* cos_sin) {
  const float p = static_cast<float>(pos);
  for (int i = 0; i < n_pairs; ++i) {
    const float angle = p * freqs[i];  // fp32, as torch.outer(arange, freqs)
    cos_sin[2 * i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    cos_sin[2 * i + 1] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

RopeTable::RopeTable(const RopeConfig& c, int64_t n_positions)
    : rope_dim_(c.rope_dim), n_positions_(n_positions), freqs_(BuildRopeFrequencies(c)) {
  cos_sin_.resize(static_cast<size_t>(n_positions) * rope_dim_);
  for (int64_t p = 0; p < n_positions; ++p) {
    RopeCosSin(freqs_.data(), rope_dim_ / 2, p, cos_sin_.data() + p * rope_dim_);
  }
}

void ApplyRope(uint16_t* x, int64_t n_vecs, int64_t vec_stride, int head_dim, int rope_dim,
               const float* cos_sin, bool inverse) {
  CHECK(rope_dim % 2 == 0 && rope_dim <= head_dim)
      << "rope_dim " << rope_dim << " head_dim " << head_dim;
  for (int64_t v = 0; v < n_vecs; ++v) {
    uint16_t* t = x + v * vec_stride + (head_dim - rope_dim);
    for (int i = 0; i < rope_dim / 2; ++i) {
      const float a = Bf16ToFloat(t[2 * i]);
      const float b = Bf16ToFloat(t[2 * i + 1]);
      const float c = cos_sin[2 * i];
      const float s = inverse ? -cos_sin[2 * i + 1] : cos_sin[2 * i + 1];
      // (a + ib)(c + is): products rounded first, then one add/sub each.
      const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
      t[2 * i] = FloatToBf16(ac - bs);
      t[2 * i + 1] = FloatToBf16(as + bc);
    }
  }
}

}  // namespace deepinfer::kernels
