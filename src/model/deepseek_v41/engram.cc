#include "model/deepseek_v41/engram.h"

#include <cmath>
#include <optional>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/e4m3.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "kernels/cpu/exp_f32.h"

namespace deepinfer::model {

void ApplyEngram(const ModelConfig& c, const EngramWeights& w, const int64_t* hash_ids,
                 int64_t rows, uint16_t* x, ThreadPool& pool) {
  const int64_t hd = c.engram_head_dim;
  const int64_t cols = static_cast<int64_t>(c.engram_max_ngram_size - 1) * c.engram_n_heads;
  const int64_t in = cols * hd;
  const int hc = c.hc_mult;
  const int64_t dim = c.dim;
  const int64_t out_w = static_cast<int64_t>(hc + 1) * dim;

  ScopedPhase phase("engram");  // the whole Engram; the phases below nest in it
  std::optional<ScopedPhase> sub(std::in_place, "engram.gather");
  // Gather and dequantize the table rows.
  std::vector<uint16_t> emb(rows * in);
  for (int64_t i = 0; i < rows * cols; ++i) {
    CHECK(hash_ids[i] >= 0 && hash_ids[i] < w.rows)
        << "engram row " << hash_ids[i] << " out of range " << w.rows;
  }
  // Rows are independent (gather, gating): split over the pool, same bits per row.
  pool.ParallelFor(rows, ThreadPool::GrainFor(in), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t col = 0; col < cols; ++col) {
        const int64_t id = hash_ids[r * cols + col];
        const uint8_t* codes = w.table + id * hd;
        const uint8_t* scales = w.table_scale + id * (hd / 32);
        uint16_t* dst = emb.data() + r * in + col * hd;
        for (int64_t i = 0; i < hd; ++i) {
          dst[i] = FloatToBf16(E4m3ToFloat(codes[i]) * Ue8m0ToFloat(scales[i / 32]));
        }
      }
    }
  });
  sub.emplace("engram.wkv");
  std::vector<uint16_t> kv(rows * out_w);
  w.wkv.Apply(emb.data(), rows, in, kv.data(), out_w, pool);

  sub.emplace("engram.gate");
  const float eps = static_cast<float>(c.norm_eps);
  const float inv_sqrt_dim = static_cast<float>(std::pow(static_cast<double>(dim), -0.5));
  pool.ParallelFor(rows, ThreadPool::GrainFor(4 * hc * dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* value = kv.data() + r * out_w + hc * dim;
      for (int k = 0; k < hc; ++k) {
        uint16_t* xc = x + (r * hc + k) * dim;
        const uint16_t* key = kv.data() + r * out_w + k * dim;
        const float* gw = w.gate_weight.data() + k * dim;
        float sx = 0.0f, sk = 0.0f, dot = 0.0f;
        for (int64_t d = 0; d < dim; ++d) {
          const float h = Bf16ToFloat(xc[d]);
          const float kk = Bf16ToFloat(key[d]);
          sx += h * h;
          sk += kk * kk;
          dot += (h * gw[d]) * kk;
        }
        const float rstd = (1.0f / std::sqrt(sx / static_cast<float>(dim) + eps)) *
                           (1.0f / std::sqrt(sk / static_cast<float>(dim) + eps));
        dot = dot * rstd * inv_sqrt_dim;
        const float mag = std::sqrt(std::max(std::fabs(dot), 1e-6f));
        const float gate = kernels::SigmoidF32(std::copysign(mag, dot));
        for (int64_t d = 0; d < dim; ++d) {
          xc[d] = FloatToBf16(Bf16ToFloat(xc[d]) + gate * Bf16ToFloat(value[d]));
        }
      }
    }
  });
}

}  // namespace deepinfer::model
