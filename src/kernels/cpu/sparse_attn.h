// Sparse indexed attention with an attention sink (the reference's sparse_attn kernel), for one
// shared K=V latent head:
//   for each query row r and head h, over the row's index list idx[r][0..n_idx):
//     s_j = (q_h . kv[idx_j]) * scale         (idx_j == -1: s_j = -inf, the slot is skipped)
//   walked in blocks of 64 list entries with an online softmax:
//     m' = max(m, max_j s_j)    (m starts at -1e30, so an all-masked row never makes NaN)
//     alpha = exp(m - m'); p_j = exp(s_j - m')
//     l = l * alpha + sum_j p_j                  (fp32 probabilities in the denominator)
//     o = o * alpha + sum_j bf16(p_j) * kv[idx_j]  (probabilities rounded to bf16 before P.V,
//                                                   relative to the running max)
//   then l = l + exp(sink_h - m) (the sink joins the denominator only) and out = bf16(o / l).
//   A row with no valid index: o = 0 and l = inf or finite -> the output is all zeros.
// Fixed evaluation order (what makes the AVX-512 path bit-identical to the reference):
//   * q.kv and the P.V block sum use VDPBF16PS pair order (dpbf16_step.h): q.kv over head_dim
//     pairs ascending; the P.V block sum over list-entry pairs (2i, 2i+1) of the block, ascending,
//     starting from +0, an odd tail padded with a zero entry;
//   * sum_j p_j: ascending j from +0; each "x * alpha + y" is a product then a sum (no fma);
//   * exp is ExpF32 (exp_f32.h).
// Every (row, head) is independent, so threads split (row, head group) and results do not depend
// on the thread count or on which rows share a call.
#pragma once

#include <cstdint>

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::kernels {

inline constexpr int kSparseAttnBlock = 64;

struct SparseAttnParams {
  const uint16_t* q = nullptr;  // [n_rows][q_row_stride] bf16: n_heads x head_dim per row
  int64_t q_row_stride = 0;
  // KV rows: kv + i * kv_stride for i in [0, n_kv). When row_kv is set, query row r reads
  // row_kv[r] instead of kv (per-sequence buffers in one batch).
  const uint16_t* kv = nullptr;
  const uint16_t* const* row_kv = nullptr;
  int64_t kv_stride = 0;
  int64_t n_kv = 0;
  const int32_t* idx = nullptr;  // [n_rows][idx_stride] int32, n_idx used; -1 = masked
  int64_t idx_stride = 0;
  int64_t n_idx = 0;
  const float* sink = nullptr;  // [n_heads] fp32
  float scale = 0.0f;           // head_dim^-0.5
  uint16_t* out = nullptr;      // [n_rows][out_row_stride] bf16: n_heads x head_dim
  int64_t out_row_stride = 0;
  int64_t n_rows = 0;
  int n_heads = 0;
  int head_dim = 0;  // even; the AVX-512 path needs a multiple of 32, the AVX2 path of 8
};

void SparseAttnRef(const SparseAttnParams& p);
void SparseAttnAvx512(const SparseAttnParams& p, ThreadPool* pool);
// AVX2 + FMA (sparse_attn_avx2.cc); head_dim a multiple of 8.
void SparseAttnAvx2(const SparseAttnParams& p, ThreadPool* pool);
// Dispatch on ActiveCpuLevel() (and head_dim); pool null = ThreadPool::Default().
void SparseAttn(const SparseAttnParams& p, ThreadPool* pool = nullptr);

// Shared argument checks (CHECK): strides, index bounds.
void CheckSparseAttnParams(const SparseAttnParams& p);

}  // namespace deepinfer::kernels
