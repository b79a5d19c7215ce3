#include "model/deepseek_v41/cost_model.h"

#include <algorithm>

namespace deepinfer::model {
namespace {

int64_t DenseBytes(const DenseLinear& d) {
  if (d.fp8) return d.fp8->StreamBytes();
  if (d.codes) return d.n * d.k + (d.n + 31) / 32 * (d.k / 32);
  return d.n * d.k * 2;
}

int64_t PlainBytes(const PlainMatrix& m) {
  return m.data ? m.n * m.k * (m.dtype == DType::kF32 ? 4 : 2) : 0;
}

int64_t ExpertBytes(const ExpertWeights& e, const ModelConfig& c) {
  if (e.w13) return static_cast<int64_t>(e.w13->bytes() + e.w2->bytes());
  if (e.w1_mapped.weight) {  // nibble pairs + one ue8m0 per 32 inputs, 3 matrices
    return 3 * static_cast<int64_t>(c.moe_inter_dim) * c.dim * 17 / 32;
  }
  return PlainBytes(e.w1_bf16) + PlainBytes(e.w3_bf16) + PlainBytes(e.w2_bf16);
}

}  // namespace

int64_t DecodeWeightBytesPerToken(const Model& model) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  int64_t bytes = c.dim * 2 + PlainBytes(w.head) + c.dim * 2;  // embed row, head, final norm
  const int64_t hc_fn = static_cast<int64_t>(2 + c.hc_mult) * c.hc_mult * c.hc_mult * c.dim * 4;
  for (int li = 0; li < c.n_layers; ++li) {
    const LayerDescriptor& d = model.layers()[li];
    const LayerWeights& lw = w.layers[li];
    const AttentionWeights& a = lw.attn;
    bytes += 2 * hc_fn + 2 * c.dim * 2;
    bytes += DenseBytes(a.wq_a) + DenseBytes(a.wq_b) + DenseBytes(a.wkv) + DenseBytes(a.wo_b);
    bytes += static_cast<int64_t>(a.wo_a.size()) * 2;
    for (const auto& g : a.wo_a_fp8) bytes += g.StreamBytes();
    if (a.compressor) bytes += PlainBytes(a.compressor->wkv) + PlainBytes(a.compressor->wgate);
    if (a.indexer) {
      bytes += DenseBytes(a.indexer->wq_b) + PlainBytes(a.indexer->weights_proj) +
               PlainBytes(a.indexer->wk);
    }
    bytes += PlainBytes(lw.moe.gate);
    bytes += d.n_activated_experts * ExpertBytes(lw.moe.experts[0], c);
    bytes +=
        DenseBytes(lw.moe.shared.w1) + DenseBytes(lw.moe.shared.w2) + DenseBytes(lw.moe.shared.w3);
    if (lw.engram) {
      const int64_t cols = static_cast<int64_t>(c.engram_max_ngram_size - 1) * c.engram_n_heads;
      bytes += DenseBytes(lw.engram->wkv) + cols * c.engram_head_dim * 33 / 32;
    }
  }
  return bytes;
}

double PrefillFlops(const Model& model, int64_t n) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  double macs_per_token = 0;
  const double hc_fn = static_cast<double>(2 + c.hc_mult) * c.hc_mult * c.hc_mult * c.dim;
  double attn_macs = 0;
  for (int li = 0; li < c.n_layers; ++li) {
    const LayerDescriptor& d = model.layers()[li];
    const LayerWeights& lw = w.layers[li];
    const AttentionWeights& a = lw.attn;
    macs_per_token += 2 * hc_fn;
    for (const DenseLinear* dl : {&a.wq_a, &a.wq_b, &a.wkv, &a.wo_b}) {
      macs_per_token += static_cast<double>(dl->n) * dl->k;
    }
    macs_per_token +=
        static_cast<double>(c.o_groups) * c.o_lora_rank * c.n_heads * c.head_dim / c.o_groups;
    if (a.compressor) {
      macs_per_token += static_cast<double>(a.compressor->wkv.n) * a.compressor->wkv.k *
                        (d.compressor_pools ? 2 : 1);
    }
    if (a.indexer) {
      macs_per_token += static_cast<double>(a.indexer->wq_b.n) * a.indexer->wq_b.k +
                        static_cast<double>(a.indexer->weights_proj.n) * c.dim;
    }
    macs_per_token += static_cast<double>(lw.moe.gate.n) * c.dim;
    macs_per_token += (d.n_activated_experts + 1) * 3.0 * c.moe_inter_dim * c.dim;
    if (lw.engram) macs_per_token += static_cast<double>(lw.engram->wkv.n) * lw.engram->wkv.k;
    // Attention and indexer, summed over positions.
    for (int64_t p = 0; p < n; ++p) {
      double entries = static_cast<double>(std::min<int64_t>(p + 1, c.window_size));
      if (d.has_compressed_kv()) {
        const int64_t visible = (p + 1) / d.compress_ratio;
        entries += static_cast<double>(std::min<int64_t>(visible, c.index_topk));
        if (d.has_indexer) {
          attn_macs += static_cast<double>(visible) * c.index_n_heads * c.index_head_dim;
        }
      }
      attn_macs += 2.0 * entries * c.n_heads * c.head_dim;
    }
  }
  const double head = static_cast<double>(c.vocab_size) * c.dim;
  return 2.0 * (macs_per_token * static_cast<double>(n) + attn_macs + head);
}

}  // namespace deepinfer::model
