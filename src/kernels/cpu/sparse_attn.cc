#include "kernels/cpu/sparse_attn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dpbf16_step.h"
#include "kernels/cpu/exp_f32.h"

namespace deepinfer::kernels {

void CheckSparseAttnParams(const SparseAttnParams& p) {
  CHECK(p.head_dim > 0 && p.head_dim % 2 == 0) << "SparseAttn: head_dim " << p.head_dim;
  CHECK(p.n_heads > 0) << "SparseAttn: n_heads " << p.n_heads;
  CHECK(p.kv != nullptr || p.row_kv != nullptr) << "SparseAttn: no KV";
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const int32_t* idx = p.idx + r * p.idx_stride;
    for (int64_t j = 0; j < p.n_idx; ++j) {
      CHECK(idx[j] >= -1 && idx[j] < p.n_kv)
          << "SparseAttn: row " << r << " index " << idx[j] << " outside [-1, " << p.n_kv << ")";
    }
  }
}

namespace {

// One (row, head), in the order documented in sparse_attn.h.
void AttendOneHead(const SparseAttnParams& p, int64_t r, int h, std::vector<float>& o) {
  const int d = p.head_dim;
  const uint16_t* q = p.q + r * p.q_row_stride + static_cast<int64_t>(h) * d;
  const uint16_t* kv = p.row_kv ? p.row_kv[r] : p.kv;
  const int32_t* idx = p.idx + r * p.idx_stride;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<uint16_t> zero_row(d, 0);

  o.assign(d, 0.0f);
  std::vector<float> block_sum(d);
  float m = -1e30f, l = 0.0f;
  float s[kSparseAttnBlock];
  uint16_t pb[kSparseAttnBlock + 1];
  const uint16_t* rows[kSparseAttnBlock + 1];
  for (int64_t b0 = 0; b0 < p.n_idx; b0 += kSparseAttnBlock) {
    const int bn = static_cast<int>(std::min<int64_t>(kSparseAttnBlock, p.n_idx - b0));
    float block_max = neg_inf;
    for (int j = 0; j < bn; ++j) {
      const int32_t i = idx[b0 + j];
      if (i < 0) {
        s[j] = neg_inf;
        rows[j] = zero_row.data();
      } else {
        rows[j] = kv + static_cast<int64_t>(i) * p.kv_stride;
        s[j] = DotBf16PairOrder(q, rows[j], d) * p.scale;
      }
      block_max = std::fmax(block_max, s[j]);
    }
    const float m_new = std::fmax(m, block_max);
    const float alpha = ExpF32(m - m_new);
    float psum = 0.0f;
    for (int j = 0; j < bn; ++j) {
      const float pj = ExpF32(s[j] - m_new);
      psum += pj;
      pb[j] = FloatToBf16(pj);
    }
    l = l * alpha + psum;
    m = m_new;
    const int padded = bn + (bn & 1);
    if (padded != bn) {
      pb[bn] = 0;
      rows[bn] = zero_row.data();
    }
    std::fill(block_sum.begin(), block_sum.end(), 0.0f);
    for (int j = 0; j < padded; j += 2) {
      for (int c = 0; c < d; ++c) {
        block_sum[c] = DpBf16Step(block_sum[c], MakeBf16Pair(pb[j], pb[j + 1]),
                                  MakeBf16Pair(rows[j][c], rows[j + 1][c]));
      }
    }
    for (int c = 0; c < d; ++c) o[c] = o[c] * alpha + block_sum[c];
  }
  const float sink_term = ExpF32(p.sink[h] - m);
  l = l + sink_term;
  for (int c = 0; c < d; ++c) o[c] = o[c] / l;
}

}  // namespace

void SparseAttnRef(const SparseAttnParams& p) {
  CheckSparseAttnParams(p);
  std::vector<float> o;
  for (int64_t r = 0; r < p.n_rows; ++r) {
    for (int h = 0; h < p.n_heads; ++h) {
      AttendOneHead(p, r, h, o);
      uint16_t* out = p.out + r * p.out_row_stride + static_cast<int64_t>(h) * p.head_dim;
      for (int c = 0; c < p.head_dim; ++c) out[c] = FloatToBf16(o[c]);
    }
  }
}

void SparseAttn(const SparseAttnParams& p, ThreadPool* pool) {
  if (ActiveCpuLevel() == CpuLevel::kAvx512 && p.head_dim % 32 == 0) {
    SparseAttnAvx512(p, pool ? pool : &ThreadPool::Default());
  } else if (ActiveCpuLevel() >= CpuLevel::kAvx2 && p.head_dim % 8 == 0) {
    SparseAttnAvx2(p, pool ? pool : &ThreadPool::Default());
  } else {
    SparseAttnRef(p);
  }
}

}  // namespace deepinfer::kernels
