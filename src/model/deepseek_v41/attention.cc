#include "model/deepseek_v41/attention.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/kv_qdq.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/sparse_attn.h"
#include "model/deepseek_v41/compressor.h"
#include "model/deepseek_v41/indexer.h"

namespace deepinfer::model {
namespace {

// Window KV + selected compressed entries of one segment, gathered into one buffer, and the
// per-row index lists into it; then sparse attention for the segment's rows.
void AttendSegment(const BatchContext& ctx, int li, const Segment& seg, const uint16_t* q,
                   const uint16_t* kv, uint16_t* o) {
  const ModelConfig& c = ctx.cfg();
  const LayerDescriptor& d = ctx.layer(li);
  const int64_t hd = c.head_dim, win = c.window_size;
  const LayerCache& cache = seg.state->layers[li];
  // The window starts no earlier than the first position this layer computed (decoder-side
  // replay, decoder_replay.h; 0 otherwise).
  const int64_t lo = cache.ring_from;
  const int64_t gstart = std::max<int64_t>(lo, seg.pos0 - win + 1);
  const int64_t n_window = seg.pos0 + seg.n_rows - gstart;

  // Compressed entries any row of the segment selected (ascending), and their slots.
  std::vector<int32_t> used;
  const std::vector<std::vector<int32_t>>* topk = nullptr;
  const LayerCache* comp = nullptr;
  if (d.has_compressed_kv()) {
    topk = &ctx.topk[d.index_source_layer];
    comp = &seg.state->layers[d.kv_source_layer];  // entries live in the sequence's pages
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      const auto& sel = (*topk)[seg.row0 + r];
      used.insert(used.end(), sel.begin(), sel.end());
    }
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
  }
  std::vector<uint16_t> g((n_window + used.size()) * hd);
  for (int64_t p = gstart; p < seg.pos0; ++p) {
    std::copy_n(cache.ring.data() + (p % win) * hd, hd, g.data() + (p - gstart) * hd);
  }
  std::copy_n(kv + seg.row0 * hd, seg.n_rows * hd, g.data() + (seg.pos0 - gstart) * hd);
  for (size_t i = 0; i < used.size(); ++i) {
    CHECK_LT(used[i], comp->n_entries);
    std::copy_n(seg.state->CompressedEntry(d.kv_source_layer, used[i]), hd,
                g.data() + (n_window + static_cast<int64_t>(i)) * hd);
  }

  int64_t n_idx = 0;
  for (int64_t r = 0; r < seg.n_rows; ++r) {
    const int64_t pos = seg.pos0 + r;
    int64_t n = pos - std::max<int64_t>(lo, pos - win + 1) + 1;
    if (topk) n += static_cast<int64_t>((*topk)[seg.row0 + r].size());
    n_idx = std::max(n_idx, n);
  }
  std::vector<int32_t> idx(seg.n_rows * n_idx, -1);
  for (int64_t r = 0; r < seg.n_rows; ++r) {
    const int64_t pos = seg.pos0 + r;
    int32_t* row = idx.data() + r * n_idx;
    int64_t n = 0;
    for (int64_t p = std::max<int64_t>(lo, pos - win + 1); p <= pos; ++p) {
      row[n++] = static_cast<int32_t>(p - gstart);
    }
    if (topk) {
      for (int32_t e : (*topk)[seg.row0 + r]) {
        const auto it = std::lower_bound(used.begin(), used.end(), e);
        row[n++] = static_cast<int32_t>(n_window + (it - used.begin()));
      }
    }
  }

  kernels::SparseAttnParams p;
  const int64_t qw = static_cast<int64_t>(c.n_heads) * hd;
  p.q = q + seg.row0 * qw;
  p.q_row_stride = qw;
  p.kv = g.data();
  p.kv_stride = hd;
  p.n_kv = n_window + static_cast<int64_t>(used.size());
  p.idx = idx.data();
  p.idx_stride = n_idx;
  p.n_idx = n_idx;
  p.sink = ctx.weights->layers[li].attn.sink;
  p.scale = static_cast<float>(std::pow(static_cast<double>(hd), -0.5));
  p.out = o + seg.row0 * qw;
  p.out_row_stride = qw;
  p.n_rows = seg.n_rows;
  p.n_heads = c.n_heads;
  p.head_dim = static_cast<int>(hd);
  kernels::SparseAttn(p, ctx.pool);
}

}  // namespace

void GroupedOutLora(const AttentionWeights& aw, const uint16_t* o, int64_t rows, int64_t groups,
                    int64_t gin, int64_t lora, uint16_t* u, ThreadPool& pool) {
  const int64_t qw = groups * gin;
  if (!aw.wo_a_fp8.empty()) {
    // Raw bf16 activations through the FP8 kernel (see weights.h): no activation quantization.
    // All groups in one call: at decode their GEMVs share one parallel region.
    std::vector<kernels::Fp8GemmJob> jobs(groups);
    for (int64_t g = 0; g < groups; ++g) {
      kernels::Fp8GemmParams& p = jobs[g].params;
      jobs[g].w = &aw.wo_a_fp8[g];
      p.x = o + g * gin;
      p.m = rows;
      p.ldx = qw;
      p.x_kind = kernels::ActKind::kQuantizedBf16;
      p.out = u + g * lora;
      p.ldo = groups * lora;
      p.out_dtype = kernels::OutDtype::kBf16;
    }
    Status s = kernels::Fp8GemmMany(jobs, pool);
    CHECK(s.ok()) << s.ToString();
    return;
  }
  for (int64_t g = 0; g < groups; ++g) {
    kernels::GemmBf16(aw.wo_a.data() + g * lora * gin, lora, gin, gin, o + g * gin, rows, qw,
                      u + g * lora, DType::kBF16, groups * lora, &pool);
  }
}

void RunAttention(BatchContext* ctx, int li, const uint16_t* x, uint16_t* out) {
  const ModelConfig& c = ctx->cfg();
  const LayerDescriptor& d = ctx->layer(li);
  const AttentionWeights& aw = ctx->weights->layers[li].attn;
  ThreadPool& pool = *ctx->pool;
  const int64_t rows = ctx->n_rows, dim = c.dim, hd = c.head_dim;
  const int64_t heads = c.n_heads, qw = heads * hd, ql = c.q_lora_rank;
  const int rd = c.rope_head_dim;
  const int64_t win = c.window_size;

  ScopedPhase phase_all("attn");  // the whole attention; the phases below nest in it
  std::optional<ScopedPhase> phase_qkv(std::in_place, "attn.qkv");
  // qr = q_norm(wq_a·x); q = wq_b·qr with RoPE on each head's tail.
  std::vector<uint16_t> qr(rows * ql);
  aw.wq_a.Apply(x, rows, dim, qr.data(), ql, pool);
  kernels::RmsNormInPlace(aw.q_norm, qr.data(), rows, ql, c.norm_eps);
  std::vector<uint16_t> q(rows * qw);
  aw.wq_b.Apply(qr.data(), rows, ql, q.data(), qw, pool);
  // Window KV: kv_norm(wkv·x), RoPE, FP8 QDQ over the whole latent.
  std::vector<uint16_t> kv(rows * hd);
  aw.wkv.Apply(x, rows, dim, kv.data(), hd, pool);
  kernels::RmsNormInPlace(aw.kv_norm, kv.data(), rows, hd, c.norm_eps);
  std::vector<float> cos_sin(static_cast<size_t>(rows) * rd);
  pool.ParallelFor(rows, 16, [&](int64_t r0, int64_t r1) {  // rows are independent
    for (int64_t r = r0; r < r1; ++r) {
      float* cs = cos_sin.data() + r * rd;
      kernels::RopeCosSin(ctx->freqs(li).data(), rd / 2, ctx->positions[r], cs);
      kernels::ApplyRope(q.data() + r * qw, heads, hd, static_cast<int>(hd), rd, cs, false);
      kernels::ApplyRope(kv.data() + r * hd, 1, hd, static_cast<int>(hd), rd, cs, false);
      kernels::Fp8QdqBlock32(kv.data() + r * hd, hd);
    }
  });

  phase_qkv.reset();
  if (d.has_compressed_kv()) {
    ScopedPhase phase("attn.compressor+indexer");
    if (d.owns_compressor) {
      ScopedPhase phase_c("attn.compressor");
      RunCompressor(*ctx, li, x);
    }
    if (d.has_indexer) RunIndexer(ctx, li, x, qr.data());
  }

  std::vector<uint16_t> o(rows * qw);
  ScopedPhase phase_attend("attn.sparse+out");
  for (const Segment& seg : ctx->segments)
    AttendSegment(*ctx, li, seg, q.data(), kv.data(), o.data());
  // The ring keeps the last `window` positions of every segment; the page tails keep the last
  // positions of every page (kv_pages.h).
  for (const Segment& seg : ctx->segments) {
    LayerCache& cache = seg.state->layers[li];
    for (int64_t r = std::max<int64_t>(0, seg.n_rows - win); r < seg.n_rows; ++r) {
      std::copy_n(kv.data() + (seg.row0 + r) * hd, hd,
                  cache.ring.data() + ((seg.pos0 + r) % win) * hd);
    }
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      uint16_t* tail = seg.state->RingTail(li, -1, seg.pos0 + r);
      if (tail != nullptr) std::copy_n(kv.data() + (seg.row0 + r) * hd, hd, tail);
    }
  }
  // Remove the query rotation from the output's rotary lanes.
  pool.ParallelFor(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      kernels::ApplyRope(o.data() + r * qw, heads, hd, static_cast<int>(hd), rd,
                         cos_sin.data() + r * rd, true);
    }
  });
  ScopedPhase phase_out("attn.out");
  // Grouped wo_a (block-diagonal, bf16), then wo_b.
  const int64_t groups = c.o_groups, gin = qw / groups, lora = c.o_lora_rank;
  std::vector<uint16_t> u(rows * groups * lora);
  GroupedOutLora(aw, o.data(), rows, groups, gin, lora, u.data(), pool);
  aw.wo_b.Apply(u.data(), rows, groups * lora, out, dim, pool);
}

}  // namespace deepinfer::model
