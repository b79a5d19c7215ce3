// Indexer scoring (the lightning indexer of CSA2):
//   score[r][t] = sum_h relu(q[r][h] . k[t]) * w[r][h]
// with the reference's bf16 rounding points (its einsum and elementwise ops run on bf16 tensors):
//   1. dot_h  = bf16(q_h . k_t)        fp32 accumulation, VDPBF16PS pair order (dpbf16_step.h)
//   2. relu   = dot_h > 0 ? dot_h : 0  (exact)
//   3. prod_h = bf16(relu * w_h)       w_h: bf16 head weight, already multiplied by
//                                      index_head_dim^-0.5 * index_n_heads^-0.5 (ScaleIndexWeights)
//   4. score  = bf16(sum over heads of prod_h) in fp32, in this order: 16 lanes, lane l = sum of
//      prod_{16g+l} over head groups g ascending (starting from +0); then the lanes folded by
//      halves 16 -> 8 -> 4 -> 2 -> 1 (lane j += lane j+w). The reference sums heads in fp32 too
//      (order unspecified); the terms are bf16, so the order rarely matters.
// Keys at t >= visible[r] are not computed and get -inf (the prefill causal mask); scores are
// returned as fp32 holding bf16 values.
//
// Batch invariance: each score depends only on its own q row, weights and key.
#pragma once

#include <cstdint>

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

struct IndexScoreParams {
  const uint16_t* q = nullptr;  // [n_rows][q_row_stride] bf16: n_heads x head_dim per row
  int64_t q_row_stride = 0;
  const uint16_t* w = nullptr;  // [n_rows][w_row_stride] bf16 scaled head weights
  int64_t w_row_stride = 0;
  const uint16_t* k = nullptr;  // [n_keys][k_stride] bf16 index keys
  int64_t k_stride = 0;
  // Paged keys instead of `k` (when k_pages is set): key t at
  // k_pages[t / keys_per_page] + (t % keys_per_page) * k_stride.
  const uint16_t* const* k_pages = nullptr;
  int64_t keys_per_page = 0;
  int64_t n_keys = 0;
  const int64_t* visible = nullptr;  // [n_rows] keys visible to each row, or null = all n_keys
  float* score = nullptr;            // [n_rows][score_stride] fp32
  int64_t score_stride = 0;
  int64_t n_rows = 0;
  int n_heads = 0;
  int head_dim = 0;  // even
};

// Key t of `p` (contiguous or paged).
inline const uint16_t* IndexKeyAt(const IndexScoreParams& p, int64_t t) {
  if (p.k_pages == nullptr) return p.k + t * p.k_stride;
  return p.k_pages[t / p.keys_per_page] + (t % p.keys_per_page) * p.k_stride;
}

// Shared argument check (CHECK): every row's visible count lies in [0, n_keys].
void CheckIndexScoreParams(const IndexScoreParams& p);

void IndexScoreRef(const IndexScoreParams& p);
// AVX-512 path, bit-identical to IndexScoreRef (needs head_dim % 2 == 0). Threads split rows and
// key ranges, never a reduction.
void IndexScoreAvx512(const IndexScoreParams& p, ThreadPool* pool);
// AVX2 + FMA path, bit-identical to IndexScoreRef (needs head_dim % 8 == 0).
void IndexScoreAvx2(const IndexScoreParams& p, ThreadPool* pool);
// Dispatch on ActiveCpuLevel(); pool null = ThreadPool::Default().
void IndexScore(const IndexScoreParams& p, ThreadPool* pool = nullptr);

// w_out[h] = bf16(float(w[h]) * scale): the reference's `weights_proj(x) * (softmax_scale *
// n_heads^-0.5)` on a bf16 tensor (scale is 1/64 for the release, so exact).
void ScaleIndexWeights(const uint16_t* w, int n, float scale, uint16_t* w_out);

}  // namespace deepinfer::kernels
