#include "kernels/cpu/index_score.h"

#include <limits>

#include "core/bf16.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dpbf16_step.h"

namespace deepinfer::kernels {

void ScaleIndexWeights(const uint16_t* w, int n, float scale, uint16_t* w_out) {
  for (int h = 0; h < n; ++h) w_out[h] = FloatToBf16(Bf16ToFloat(w[h]) * scale);
}

namespace {

float ScoreOne(const IndexScoreParams& p, const uint16_t* q, const uint16_t* w, const uint16_t* k) {
  float lanes[16] = {};
  for (int h = 0; h < p.n_heads; ++h) {
    const float dot = RoundToBf16(DotBf16PairOrder(q + h * p.head_dim, k, p.head_dim));
    const float relu = dot > 0.0f ? dot : 0.0f;
    lanes[h % 16] += RoundToBf16(relu * Bf16ToFloat(w[h]));
  }
  for (int width = 8; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  return RoundToBf16(lanes[0]);
}

}  // namespace

void CheckIndexScoreParams(const IndexScoreParams& p) {
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const int64_t vis = p.visible ? p.visible[r] : p.n_keys;
    CHECK(vis >= 0 && vis <= p.n_keys) << "IndexScore: visible " << vis << " of " << p.n_keys;
  }
}

void IndexScoreRef(const IndexScoreParams& p) {
  CHECK(p.head_dim % 2 == 0) << "IndexScore: head_dim must be even, got " << p.head_dim;
  CheckIndexScoreParams(p);
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const int64_t vis = p.visible ? p.visible[r] : p.n_keys;
    const uint16_t* q = p.q + r * p.q_row_stride;
    const uint16_t* w = p.w + r * p.w_row_stride;
    float* out = p.score + r * p.score_stride;
    for (int64_t t = 0; t < p.n_keys; ++t) {
      out[t] =
          t < vis ? ScoreOne(p, q, w, IndexKeyAt(p, t)) : -std::numeric_limits<float>::infinity();
    }
  }
}

void IndexScore(const IndexScoreParams& p, ThreadPool* pool) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512) {
    IndexScoreAvx512(p, pool ? pool : &ThreadPool::Default());
  } else if (ActiveCpuLevel() >= CpuLevel::kAvx2 && p.head_dim % 8 == 0) {
    IndexScoreAvx2(p, pool ? pool : &ThreadPool::Default());
  } else {
    IndexScoreRef(p);
  }
}

}  // namespace deepinfer::kernels
