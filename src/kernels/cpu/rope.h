// Rotary position embedding with optional YaRN, on interleaved pairs of the LAST rope_dim lanes.
//
// Frequency table (the reference's precompute_freqs_cis, fp32 throughout):
//   f_i = 1 / theta^(2i / rope_dim)  for i = 0 .. rope_dim/2 - 1  (pow rounded once to fp32,
//                                                                  then an fp32 reciprocal)
//   YaRN (when original_seq_len > 0):
//     corr(r) = rope_dim * ln(orig / (2*pi*r)) / (2 ln theta)          (double, like Python math)
//     low = max(floor(corr(beta_fast)), 0), high = min(ceil(corr(beta_slow)), rope_dim - 1)
//     ramp_i = clamp((i - low) / max(high - low, 1e-3), 0, 1), smooth = 1 - ramp   (fp32)
//     f_i = (f_i / factor) * (1 - smooth) + f_i * smooth               (fp32, this order)
//   No attention/mscale factor.
// Rotation at position pos: angle = float(pos) * f_i in fp32 (torch.outer in fp32), and
// cos/sin are evaluated in double from that fp32 angle and rounded to fp32 (a correctly rounded
// stand-in for torch.polar's fp32 cos/sin, which may differ from it by an ulp).
// Apply: (a, b) = (x[2i], x[2i+1]) as fp32; forward: (a*c - b*s, a*s + b*c); inverse (conjugate):
// (a*c + b*s, b*c - a*s); each product rounded to fp32 before the add (as torch's complex
// multiply), the result rounded to bf16.
#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::kernels {

struct RopeConfig {
  int rope_dim = 64;  // rotated lanes (even)
  double theta = 10000.0;
  // YaRN is on when original_seq_len > 0.
  int64_t original_seq_len = 0;
  double factor = 1.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

// The YaRN band [low, high] of pair indices (for inspection and tests).
struct YarnBand {
  int low = 0;
  int high = 0;
};
YarnBand ComputeYarnBand(const RopeConfig& c);

// rope_dim/2 fp32 frequencies.
std::vector<float> BuildRopeFrequencies(const RopeConfig& c);

// cos/sin for one position: cos_sin[2i] = cos(pos*f_i), cos_sin[2i+1] = sin(pos*f_i).
void RopeCosSin(const float* freqs, int n_pairs, int64_t pos, float* cos_sin);

// A cos/sin table for positions [0, n_positions): row p holds RopeCosSin(p).
class RopeTable {
 public:
  RopeTable(const RopeConfig& c, int64_t n_positions);
  const float* Row(int64_t pos) const { return cos_sin_.data() + pos * rope_dim_; }
  int rope_dim() const { return rope_dim_; }
  int64_t n_positions() const { return n_positions_; }
  const std::vector<float>& freqs() const { return freqs_; }

 private:
  int rope_dim_;
  int64_t n_positions_;
  std::vector<float> freqs_;
  std::vector<float> cos_sin_;  // [n_positions][rope_dim]
};

// Rotates the last rope_dim lanes of each of n_vecs head vectors (length head_dim, spaced
// vec_stride elements apart) in place, all at the same position (cos_sin from RopeTable::Row).
void ApplyRope(uint16_t* x, int64_t n_vecs, int64_t vec_stride, int head_dim, int rope_dim,
               const float* cos_sin, bool inverse);

}  // namespace deepinfer::kernels
