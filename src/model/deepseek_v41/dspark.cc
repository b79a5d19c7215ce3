// DSpark draft stages (mtp.*) of Model (v41_model.md §3.10; official forward_spec).
//   Extend: main_x = RMSNorm_main(main_proj · taps); every stage writes
//           FP8QDQ(RoPE(kv_norm(wkv · main_x))) into its ring at slot pos % window.
//   Draft (after position p, starting token t): rows [t, noise, …] at positions p+1 … p+B run
//           through every stage as ordinary blocks whose attention sees the stage ring (slots
//           0 .. min(window, p+1)-1) and all B draft rows (bidirectional); then the last stage's
//           collapse, norm and the backbone head, plus the Markov head's bias of the preceding
//           token, drafting greedily (or what a DraftChooser picks); the confidence head reads
//           [hidden_i ; markov_embed_i].
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/kv_qdq.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/sparse_attn.h"
#include "model/deepseek_v41/attention.h"
#include "model/deepseek_v41/block.h"
#include "model/deepseek_v41/draft_vocab.h"
#include "model/deepseek_v41/mhc.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

// kv_norm(wkv·x), RoPE at positions pos[r], FP8 QDQ: [rows][head_dim].
void StageKv(const ModelConfig& c, const AttentionWeights& aw, const std::vector<float>& freqs,
             const uint16_t* x, int64_t rows, const int64_t* pos, uint16_t* kv, ThreadPool& pool) {
  const int64_t hd = c.head_dim;
  const int rd = c.rope_head_dim;
  aw.wkv.Apply(x, rows, c.dim, kv, hd, pool);
  kernels::RmsNormInPlace(aw.kv_norm, kv, rows, hd, c.norm_eps);
  std::vector<float> cs(rd);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::RopeCosSin(freqs.data(), rd / 2, pos[r], cs.data());
    kernels::ApplyRope(kv + r * hd, 1, hd, static_cast<int>(hd), rd, cs.data(), false);
    kernels::Fp8QdqBlock32(kv + r * hd, hd);
  }
}

int32_t ArgMax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace

Status Model::DSparkExtend(SequenceState* state, const uint16_t* taps, int64_t rows) const {
  const DSparkExtendItem item{state, taps, rows};
  return DSparkExtend(std::span<const DSparkExtendItem>(&item, 1));
}

Status Model::DSparkExtend(std::span<const DSparkExtendItem> items) const {
  const ModelConfig& c = config_;
  if (!c.dspark_enabled()) return InvalidArgument("this model has no DSpark stages");
  const int64_t dim = c.dim, hd = c.head_dim, win = c.window_size;
  const int64_t width = static_cast<int64_t>(c.dspark_target_layer_ids.size()) * dim;
  // Every sequence's rows in one batch (each row's result does not depend on the others, so
  // the bits are those of one call per sequence, at one pass over the weights per step).
  int64_t rows = 0;
  for (const DSparkExtendItem& it : items) rows += it.rows;
  if (rows == 0) return Status::Ok();
  ScopedPhase phase("dspark.extend");
  std::vector<uint16_t> gathered;
  const uint16_t* taps = items.size() == 1 ? items[0].taps : nullptr;
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(rows));
  if (taps == nullptr) gathered.reserve(static_cast<size_t>(rows * width));
  for (const DSparkExtendItem& it : items) {
    for (int64_t r = 0; r < it.rows; ++r) pos.push_back(it.state->dspark_length + r);
    if (taps == nullptr) gathered.insert(gathered.end(), it.taps, it.taps + it.rows * width);
  }
  if (taps == nullptr) taps = gathered.data();
  const LayerWeights& first = weights_.layers[c.n_layers];
  std::vector<uint16_t> main_x(rows * dim), kv(rows * hd);
  first.main_proj->Apply(taps, rows, width, main_x.data(), dim, *pool_);
  kernels::RmsNormInPlace(first.main_norm, main_x.data(), rows, dim, c.norm_eps);
  for (int s = 0; s < c.n_mtp_layers; ++s) {
    const int li = c.n_layers + s;
    StageKv(c, weights_.layers[li].attn, rope_freqs_[li], main_x.data(), rows, pos.data(),
            kv.data(), *pool_);
    int64_t row0 = 0;
    for (const DSparkExtendItem& it : items) {
      SequenceState* state = it.state;
      const int64_t pos0 = state->dspark_length;
      const uint16_t* skv = kv.data() + row0 * hd;
      std::vector<uint16_t>& ring = state->dspark[s];
      for (int64_t r = std::max<int64_t>(0, it.rows - win); r < it.rows; ++r) {
        std::copy_n(skv + r * hd, hd, ring.data() + ((pos0 + r) % win) * hd);
      }
      for (int64_t r = 0; r < it.rows; ++r) {  // page tails, for prefix reuse (kv_pages.h)
        uint16_t* tail = state->RingTail(-1, s, pos0 + r);
        if (tail != nullptr) std::copy_n(skv + r * hd, hd, tail);
      }
      row0 += it.rows;
    }
  }
  for (const DSparkExtendItem& it : items) it.state->dspark_length += it.rows;
  return Status::Ok();
}

StatusOr<DraftOutput> Model::DSparkDraft(const SequenceState& state, int32_t token,
                                         const DraftVocabulary* draft_vocab,
                                         const DraftChooser* choose) const {
  const ModelConfig& c = config_;
  if (!c.dspark_enabled()) return InvalidArgument("this model has no DSpark stages");
  if (state.dspark_length == 0) return InvalidArgument("DSpark draft before any position");
  ScopedPhase phase("dspark.draft");
  if (token < 0 || token >= c.vocab_size) return InvalidArgument("draft token out of range");
  const int64_t dim = c.dim, hd = c.head_dim, hc = c.hc_mult, win = c.window_size;
  const int64_t heads = c.n_heads, qw = heads * hd, ql = c.q_lora_rank;
  const int rd = c.rope_head_dim;
  const int64_t block = c.dspark_block_size, vocab = c.vocab_size;
  const int64_t p = state.dspark_length - 1;

  BatchContext ctx;
  ctx.config = &config_;
  ctx.layers = &layers_;
  ctx.weights = &weights_;
  ctx.pool = pool_;
  ctx.experts = experts_;
  ctx.rope_freqs = &rope_freqs_;
  ctx.n_rows = block;

  std::vector<int32_t> ids(block, c.dspark_noise_token_id);
  ids[0] = token;
  std::vector<uint16_t> x(block * hc * dim);
  std::vector<float> pre(block * hc, 0.0f);
  for (int64_t r = 0; r < block; ++r) {
    for (int64_t k = 0; k < hc; ++k) {
      std::copy_n(weights_.embed + static_cast<int64_t>(ids[r]) * dim, dim,
                  x.data() + (r * hc + k) * dim);
    }
    pre[r * hc] = 1.0f;
  }

  const int64_t n_ring = std::min(win, p + 1);
  for (int s = 0; s < c.n_mtp_layers; ++s) {
    const int li = c.n_layers + s;
    const AttentionWeights& aw = weights_.layers[li].attn;
    const std::vector<uint16_t>& ring = state.dspark[s];
    AttentionFn attn = [&](const uint16_t* in, uint16_t* out) {
      std::vector<uint16_t> qr(block * ql), q(block * qw);
      aw.wq_a.Apply(in, block, dim, qr.data(), ql, *pool_);
      kernels::RmsNormInPlace(aw.q_norm, qr.data(), block, ql, c.norm_eps);
      aw.wq_b.Apply(qr.data(), block, ql, q.data(), qw, *pool_);
      std::vector<float> cs(block * rd);
      for (int64_t r = 0; r < block; ++r) {
        kernels::RopeCosSin(rope_freqs_[li].data(), rd / 2, p + 1 + r, cs.data() + r * rd);
        kernels::ApplyRope(q.data() + r * qw, heads, hd, static_cast<int>(hd), rd,
                           cs.data() + r * rd, false);
      }
      // KV: the ring's slots, then the draft rows.
      std::vector<uint16_t> g((win + block) * hd);
      std::copy_n(ring.data(), win * hd, g.data());
      std::vector<int64_t> draft_pos(static_cast<size_t>(block));
      for (int64_t r = 0; r < block; ++r) draft_pos[static_cast<size_t>(r)] = p + 1 + r;
      StageKv(c, aw, rope_freqs_[li], in, block, draft_pos.data(), g.data() + win * hd, *pool_);
      std::vector<int32_t> idx;
      for (int64_t r = 0; r < block; ++r) {
        for (int64_t i = 0; i < n_ring; ++i) idx.push_back(static_cast<int32_t>(i));
        for (int64_t i = 0; i < block; ++i) idx.push_back(static_cast<int32_t>(win + i));
      }
      std::vector<uint16_t> o(block * qw);
      kernels::SparseAttnParams sp;
      sp.q = q.data();
      sp.q_row_stride = qw;
      sp.kv = g.data();
      sp.kv_stride = hd;
      sp.n_kv = win + block;
      sp.idx = idx.data();
      sp.n_idx = n_ring + block;
      sp.idx_stride = sp.n_idx;
      sp.sink = aw.sink;
      sp.scale = static_cast<float>(std::pow(static_cast<double>(hd), -0.5));
      sp.out = o.data();
      sp.out_row_stride = qw;
      sp.n_rows = block;
      sp.n_heads = static_cast<int>(heads);
      sp.head_dim = static_cast<int>(hd);
      kernels::SparseAttn(sp, pool_);
      for (int64_t r = 0; r < block; ++r) {
        kernels::ApplyRope(o.data() + r * qw, heads, hd, static_cast<int>(hd), rd,
                           cs.data() + r * rd, true);
      }
      const int64_t groups = c.o_groups, gin = qw / groups, lora = c.o_lora_rank;
      std::vector<uint16_t> u(block * groups * lora);
      GroupedOutLora(aw, o.data(), block, groups, gin, lora, u.data(), *pool_);
      aw.wo_b.Apply(u.data(), block, groups * lora, out, dim, *pool_);
    };
    RunBlock(ctx, li, attn, x.data(), pre.data());
  }

  const DraftHeadWeights& head = *weights_.layers[c.n_layers + c.n_mtp_layers - 1].draft_head;
  DraftOutput d;
  d.hidden.assign(block * dim, 0);
  HcCollapse(c, x.data(), pre.data(), block, d.hidden.data());
  std::vector<uint16_t> normed = d.hidden;
  kernels::RmsNormInPlace(head.norm, normed.data(), block, dim, c.norm_eps);
  // The ids the drafter ranks: the whole vocabulary, or draft_vocab's rows (draft_vocab.h).
  const int64_t n_out = draft_vocab != nullptr ? draft_vocab->size() : vocab;
  const uint16_t* head_rows = draft_vocab != nullptr ? draft_vocab->head() : weights_.head.bf16();
  const uint16_t* markov_rows =
      draft_vocab != nullptr ? draft_vocab->markov_head() : head.markov_head.bf16();
  d.logits.assign(block * n_out, 0.0f);
  kernels::GemmBf16(head_rows, n_out, dim, dim, normed.data(), block, dim, d.logits.data(),
                    DType::kF32, n_out, pool_);

  const int64_t rank = c.dspark_markov_rank;
  d.ids.assign(block + 1, 0);
  d.ids[0] = token;
  d.confidence.assign(block, 0.0f);
  // The Markov and confidence heads run in fp32 on bf16 values (exact products): bf16 GEMMs
  // with fp32 output.
  std::vector<float> bias(n_out);
  std::vector<uint16_t> joint(dim + rank);
  for (int64_t i = 0; i < block; ++i) {
    const uint16_t* emb = head.markov_embed.bf16() + static_cast<int64_t>(d.ids[i]) * rank;
    kernels::GemmBf16(markov_rows, n_out, rank, rank, emb, 1, rank, bias.data(), DType::kF32, n_out,
                      pool_);
    float* li = d.logits.data() + i * n_out;
    for (int64_t v = 0; v < n_out; ++v) li[v] = li[v] + bias[v];
    int64_t best = 0;
    if (choose != nullptr && *choose) {
      DI_ASSIGN_OR_RETURN(best,
                          (*choose)(i, std::span<const float>(li, static_cast<size_t>(n_out))));
      if (best < 0 || best >= n_out) return Internal("DSparkDraft: chooser index out of range");
    } else {
      best = ArgMax(li, n_out);
    }
    d.ids[i + 1] = draft_vocab != nullptr ? draft_vocab->ids()[static_cast<size_t>(best)]
                                          : static_cast<int32_t>(best);
    std::copy_n(d.hidden.data() + i * dim, dim, joint.data());
    std::copy_n(emb, rank, joint.data() + dim);
    kernels::GemmBf16(head.confidence.bf16(), 1, dim + rank, dim + rank, joint.data(), 1,
                      dim + rank, &d.confidence[i], DType::kF32, 1, nullptr);
  }
  return d;
}

}  // namespace deepinfer::model
