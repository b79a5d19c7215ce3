#include "model/deepseek_v41/compressor.h"

#include <algorithm>
#include <limits>

#include "core/bf16.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/exp_f32.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/kv_qdq.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/deepseek_v41/rollback.h"

namespace deepinfer::model {
namespace {

// Writes the index key and the compressed KV of one pre-RoPE latent (entry j) into the
// sequence's page for it.
void EmitEntry(const BatchContext& ctx, int li, const uint16_t* latent, int64_t j,
               SequenceState& st) {
  LayerCache& cache = st.layers[li];
  const ModelConfig& c = ctx.cfg();
  const LayerDescriptor& d = ctx.layer(li);
  const AttentionWeights& aw = ctx.weights->layers[li].attn;
  const int64_t hd = c.head_dim;
  const int rd = c.rope_head_dim;
  std::vector<float> cos_sin(rd);
  kernels::RopeCosSin(ctx.freqs(li).data(), rd / 2, j * d.compress_ratio, cos_sin.data());
  if (d.has_indexer) {
    const IndexerWeights& iw = *aw.indexer;
    const int64_t id = c.index_head_dim;
    std::vector<uint16_t> k(id);
    kernels::GemmBf16(iw.wk.bf16(), id, hd, hd, latent, 1, hd, k.data(), DType::kBF16, id, nullptr);
    kernels::RmsNormInPlace(iw.k_norm, k.data(), 1, id, c.norm_eps);
    kernels::ApplyRope(k.data(), 1, id, static_cast<int>(id), rd, cos_sin.data(), false);
    kernels::Fp4QdqPow2Block32(k.data(), id);
    std::copy(k.begin(), k.end(), st.IndexKey(li, j));
  }
  uint16_t* kv = st.CompressedEntry(li, j);
  std::copy_n(latent, hd, kv);
  kernels::ApplyRope(kv, 1, hd, static_cast<int>(hd), rd, cos_sin.data(), false);
  kernels::Fp4QdqE4m3Block16(kv, hd);
  cache.n_entries = j + 1;
}

}  // namespace

void RunCompressor(const BatchContext& ctx, int li, const uint16_t* x) {
  const ModelConfig& c = ctx.cfg();
  const LayerDescriptor& d = ctx.layer(li);
  const CompressorWeights& cw = *ctx.weights->layers[li].attn.compressor;
  const int64_t dim = c.dim, hd = c.head_dim, rows = ctx.n_rows;
  const int ratio = d.compress_ratio;

  if (!d.compressor_pools) {
    // One latent per token.
    std::vector<uint16_t> latent(rows * hd);
    kernels::GemmBf16(cw.wkv.bf16(), hd, dim, dim, x, rows, dim, latent.data(), DType::kBF16, hd,
                      ctx.pool);
    kernels::RmsNormInPlace(cw.norm, latent.data(), rows, hd, c.norm_eps);
    for (const Segment& seg : ctx.segments) {
      LayerCache& cache = seg.state->layers[li];
      for (int64_t r = 0; r < seg.n_rows; ++r) {
        const int64_t pos = seg.pos0 + r;
        CHECK_EQ(cache.n_entries, pos);
        EmitEntry(ctx, li, latent.data() + (seg.row0 + r) * hd, pos, *seg.state);
      }
    }
    return;
  }

  // Pooling compressor: fp32 projections of x.float().
  // fp32 projections of x.float() with bf16-exact weights: exact products, so the bf16 GEMM with
  // fp32 output computes the same sums.
  std::vector<float> kv(rows * hd), score(rows * hd);
  kernels::GemmBf16(cw.wkv.bf16(), hd, dim, dim, x, rows, dim, kv.data(), DType::kF32, hd,
                    ctx.pool);
  kernels::GemmBf16(cw.wgate.bf16(), hd, dim, dim, x, rows, dim, score.data(), DType::kF32, hd,
                    ctx.pool);
  std::vector<float> pooled(hd);
  std::vector<uint16_t> latent(hd);
  std::vector<float> e(ratio);
  for (const Segment& seg : ctx.segments) {
    LayerCache& cache = seg.state->layers[li];
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      const int64_t pos = seg.pos0 + r;
      const int64_t slot = pos % ratio;
      if (seg.state->group_undo != nullptr) {
        RecordGroupWrite(seg.state->group_undo, li, pos, slot, cache.group_kv.data() + slot * hd,
                         cache.group_score.data() + slot * hd, hd);
      }
      std::copy_n(kv.data() + (seg.row0 + r) * hd, hd, cache.group_kv.data() + slot * hd);
      std::copy_n(score.data() + (seg.row0 + r) * hd, hd, cache.group_score.data() + slot * hd);
      if ((pos + 1) % ratio != 0) continue;
      for (int64_t ch = 0; ch < hd; ++ch) {
        float m = -std::numeric_limits<float>::infinity();
        for (int t = 0; t < ratio; ++t) m = std::max(m, cache.group_score[t * hd + ch]);
        float sum = 0.0f;
        for (int t = 0; t < ratio; ++t) {
          e[t] = kernels::ExpF32(cache.group_score[t * hd + ch] - m);
          sum += e[t];
        }
        float acc = 0.0f;
        for (int t = 0; t < ratio; ++t) acc += cache.group_kv[t * hd + ch] * (e[t] / sum);
        pooled[ch] = acc;
      }
      for (int64_t ch = 0; ch < hd; ++ch) latent[ch] = FloatToBf16(pooled[ch]);
      kernels::RmsNormInPlace(cw.norm, latent.data(), 1, hd, c.norm_eps);
      const int64_t j = pos / ratio;
      CHECK_EQ(cache.n_entries, j);
      EmitEntry(ctx, li, latent.data(), j, *seg.state);
    }
  }
}

}  // namespace deepinfer::model
