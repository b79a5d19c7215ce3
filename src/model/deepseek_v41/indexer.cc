#include "model/deepseek_v41/indexer.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

// The KV source whose index keys layer `li` scores for this sequence: its own in owner mode; the
// last publisher in official mode, unless that cache cannot cover the `visible` entries this call
// needs (possible only for chunks the official code never runs, e.g. ratio > 2 with odd chunks),
// where the own keys are the only meaningful choice.
int KeyLayer(const BatchContext& ctx, int li, const SequenceState& state, int64_t visible) {
  const LayerDescriptor& d = ctx.layer(li);
  const int published = state.published_index_owner;
  if (ctx.index_key_mode == IndexKeyMode::kOwner || published < 0 ||
      state.layers[published].n_entries < visible) {
    return d.index_key_layer;
  }
  return published;
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
    const SequenceState& st = *seg.state;
    std::vector<int64_t> visible(seg.n_rows);
    int64_t max_visible = 0;
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      visible[r] = (seg.pos0 + r + 1) / ratio;
      max_visible = std::max(max_visible, visible[r]);
    }
    const int key_layer = KeyLayer(*ctx, li, st, max_visible);
    const LayerCache& keys = st.layers[key_layer];
    CHECK_LE(max_visible, keys.n_entries) << "layer " << li << " reads layer " << key_layer;
    if (max_visible == 0) continue;
    std::vector<float> score(seg.n_rows * max_visible);
    const KvPageLayout::Layer& key_pages = st.page_layout().layers[key_layer];
    std::vector<const uint16_t*> k_pages;
    for (int64_t j = 0; j < max_visible; j += key_pages.entries_per_page) {
      k_pages.push_back(st.IndexKey(key_layer, j));
    }
    kernels::IndexScoreParams p;
    p.q = q.data() + seg.row0 * qw;
    p.q_row_stride = qw;
    p.w = w.data() + seg.row0 * heads;
    p.w_row_stride = heads;
    p.k_pages = k_pages.data();
    p.keys_per_page = key_pages.entries_per_page;
    p.k_stride = id;
    p.n_keys = max_visible;
    p.visible = visible.data();
    p.score = score.data();
    p.score_stride = max_visible;
    p.n_rows = seg.n_rows;
    p.n_heads = static_cast<int>(heads);
    p.head_dim = static_cast<int>(id);
    {
      ScopedPhase phase("attn.indexer.score");
      kernels::IndexScore(p, ctx->pool);
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
