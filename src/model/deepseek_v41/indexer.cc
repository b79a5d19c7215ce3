#include "model/deepseek_v41/indexer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/index_score.h"
#include "kernels/cpu/kv_qdq.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/topk.h"

namespace deepinfer::model {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The KV source whose index keys layer `li` scores for one row: its own in owner mode, the
// official slot for that row otherwise (index_key_schedule.h).
int KeyLayer(const BatchContext& ctx, int li, const SequenceState& state, int64_t pos) {
  if (ctx.index_key_mode == IndexKeyMode::kOwner) return ctx.layer(li).index_key_layer;
  return ctx.index_keys->KeyLayer(li, pos, state.prompt_length);
}

// Scores rows `rows` (segment-relative, ascending) of one segment against the first
// max(visible) index keys of `key_layer`: score[r][t] for t < visible[r], at row stride
// `score_stride`. Rows that are not contiguous are gathered first (official-mode rows of one
// segment that score different layers' keys).
void ScoreRows(const BatchContext& ctx, const Segment& seg, int key_layer,
               const std::vector<int64_t>& rows, const uint16_t* q, const uint16_t* w,
               const int64_t* visible, float* score, int64_t score_stride) {
  const ModelConfig& c = ctx.cfg();
  const int64_t heads = c.index_n_heads, id = c.index_head_dim, qw = heads * id;
  const SequenceState& st = *seg.state;
  int64_t n_keys = 0;
  for (int64_t r : rows) n_keys = std::max(n_keys, visible[r]);
  CHECK_LE(n_keys, st.layers[key_layer].n_entries) << "reads layer " << key_layer;
  if (n_keys == 0) return;
  const KvPageLayout::Layer& key_pages = st.page_layout().layers[key_layer];
  std::vector<const uint16_t*> k_pages;
  for (int64_t j = 0; j < n_keys; j += key_pages.entries_per_page) {
    k_pages.push_back(st.IndexKey(key_layer, j));
  }
  const auto n = static_cast<int64_t>(rows.size());
  const bool contiguous = rows.back() - rows.front() + 1 == n;
  std::vector<uint16_t> q_rows, w_rows;
  std::vector<int64_t> vis_rows;
  std::vector<float> score_rows;
  kernels::IndexScoreParams p;
  p.q = q + (seg.row0 + rows.front()) * qw;
  p.w = w + (seg.row0 + rows.front()) * heads;
  p.visible = visible + rows.front();
  p.score = score + rows.front() * score_stride;
  p.score_stride = score_stride;
  if (!contiguous) {
    q_rows.resize(n * qw);
    w_rows.resize(n * heads);
    vis_rows.resize(n);
    score_rows.resize(n * n_keys);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = seg.row0 + rows[i];
      std::copy_n(q + row * qw, qw, q_rows.data() + i * qw);
      std::copy_n(w + row * heads, heads, w_rows.data() + i * heads);
      vis_rows[i] = visible[rows[i]];
    }
    p.q = q_rows.data();
    p.w = w_rows.data();
    p.visible = vis_rows.data();
    p.score = score_rows.data();
    p.score_stride = n_keys;
  }
  p.q_row_stride = qw;
  p.w_row_stride = heads;
  p.k_pages = k_pages.data();
  p.keys_per_page = key_pages.entries_per_page;
  p.k_stride = id;
  p.n_keys = n_keys;
  p.n_rows = n;
  p.n_heads = static_cast<int>(heads);
  p.head_dim = static_cast<int>(id);
  kernels::IndexScore(p, ctx.pool);
  if (!contiguous) {
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(score_rows.data() + i * n_keys, vis_rows[i], score + rows[i] * score_stride);
    }
  }
}

// Candidate blocks of one row over `visible` scores -> mask (1 = keep).
std::vector<uint8_t> CandidateMask(const float* score, int64_t visible, int64_t block_size,
                                   int64_t topk_blocks) {
  std::vector<uint8_t> mask(visible, 0);
  if (visible == 0) return mask;
  const int64_t n_blocks = (visible + block_size - 1) / block_size;
  std::vector<float> block(n_blocks, -kInf);
  for (int64_t t = 0; t < visible; ++t) {
    block[t / block_size] = std::max(block[t / block_size], score[t]);
  }
  block[(visible - 1) / block_size] = kInf;  // the newest, partly filled block stays
  std::vector<int32_t> idx(std::min(topk_blocks, n_blocks));
  std::vector<float> val(idx.size());
  const int64_t k = kernels::TopK(block.data(), n_blocks, topk_blocks, idx.data(), val.data());
  for (int64_t i = 0; i < k; ++i) {
    if (val[i] == -kInf) continue;
    const int64_t b = idx[i];
    for (int64_t t = b * block_size; t < std::min(visible, (b + 1) * block_size); ++t) mask[t] = 1;
  }
  return mask;
}

}  // namespace

void RunIndexer(BatchContext* ctx, int li, const uint16_t* x, const uint16_t* qr) {
  const ModelConfig& c = ctx->cfg();
  const LayerDescriptor& d = ctx->layer(li);
  const IndexerWeights& iw = *ctx->weights->layers[li].attn.indexer;
  const int64_t rows = ctx->n_rows;
  const int64_t heads = c.index_n_heads, id = c.index_head_dim, qw = heads * id;
  const int rd = c.rope_head_dim;
  const int ratio = d.compress_ratio;

  // Queries: RoPE at the row's position, FP4 QDQ.
  std::vector<uint16_t> q(rows * qw);
  iw.wq_b.Apply(qr, rows, c.q_lora_rank, q.data(), qw, *ctx->pool);
  ctx->pool->ParallelFor(rows, 16, [&](int64_t r0, int64_t r1) {  // rows are independent
    std::vector<float> cos_sin(rd);
    for (int64_t r = r0; r < r1; ++r) {
      kernels::RopeCosSin(ctx->freqs(li).data(), rd / 2, ctx->positions[r], cos_sin.data());
      kernels::ApplyRope(q.data() + r * qw, heads, id, static_cast<int>(id), rd, cos_sin.data(),
                         false);
      kernels::Fp4QdqPow2Block32(q.data() + r * qw, qw);
    }
  });
  // Head weights.
  std::vector<uint16_t> w(rows * heads);
  kernels::GemmBf16(iw.weights_proj.bf16(), heads, c.dim, c.dim, x, rows, c.dim, w.data(),
                    DType::kBF16, heads, ctx->pool);
  const float wscale =
      static_cast<float>(std::pow(static_cast<double>(id), -0.5) * std::pow(heads, -0.5));
  kernels::ScaleIndexWeights(w.data(), static_cast<int>(rows * heads), wscale, w.data());

  auto& topk = ctx->topk[li];
  topk.assign(rows, {});
  if (d.candidate_role == CandidateRole::kSource) ctx->candidate_mask.assign(rows, {});

  for (const Segment& seg : ctx->segments) {
    std::vector<int64_t> visible(seg.n_rows);
    int64_t max_visible = 0;
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      visible[r] = (seg.pos0 + r + 1) / ratio;
      max_visible = std::max(max_visible, visible[r]);
    }
    if (max_visible == 0) continue;
    // Rows by the keys they score: one group but for official-mode rows of different kinds.
    std::vector<std::pair<int, std::vector<int64_t>>> groups;
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      const int key_layer = KeyLayer(*ctx, li, *seg.state, seg.pos0 + r);
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& e) { return e.first == key_layer; });
      if (g == groups.end()) g = groups.insert(groups.end(), {key_layer, {}});
      g->second.push_back(r);
    }
    std::vector<float> score(seg.n_rows * max_visible);
    {
      ScopedPhase phase("attn.indexer.score");
      for (const auto& [key_layer, group_rows] : groups) {
        ScoreRows(*ctx, seg, key_layer, group_rows, q.data(), w.data(), visible.data(),
                  score.data(), max_visible);
      }
    }
    ScopedPhase phase("attn.indexer.topk");

    // Rows are independent and their cost grows with `visible`: chunks from a shared counter.
    ctx->pool->ParallelForDynamic(seg.n_rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t row = seg.row0 + r;
        float* s = score.data() + r * max_visible;
        const int64_t vis = visible[r];
        if (d.candidate_role == CandidateRole::kSource) {
          ctx->candidate_mask[row] =
              CandidateMask(s, vis, c.candidate_block_size, c.candidate_topk_blocks);
        } else if (d.candidate_role == CandidateRole::kConsumer) {
          const std::vector<uint8_t>& mask = ctx->candidate_mask[row];
          CHECK_EQ(static_cast<int64_t>(mask.size()), vis) << "candidate mask width";
          for (int64_t t = 0; t < vis; ++t) {
            if (!mask[t]) s[t] = -kInf;
          }
        }
        const int64_t k = std::min<int64_t>(c.index_topk, vis);
        std::vector<int32_t>& out = topk[row];
        out.resize(k);
        if (k == 0) continue;
        kernels::TopK(s, vis, k, out.data(), nullptr);
        kernels::SortIndicesAscending(out.data(), k);
      }
    });
  }
}

}  // namespace deepinfer::model
