// ValidateModelConfig: cross-field checks, each failure a Status naming the field(s).
//
// The layer-topology rules are the ones the official inference/model.py follows implicitly:
// layers run in order and hand state down through one shared slot each, so
//   * a layer with compress ratio r > 0 reads the compressed KV (and index keys) of the last
//     kv_source_layer at or before it, which must pool with the same ratio (its entry count is
//     (pos + 1) // r on both sides);
//   * a KV source owns the indexer's key projection (wk), so it must also be an index source;
//   * a layer that is not an index source reuses the top-k of the last index source at or before
//     it, which then reads the same KV cache (guaranteed once every KV source indexes);
//   * the candidate source must run an indexer; every later index source masks its scores with
//     the candidate mask, which is shaped like the source's KV cache, so it must share it;
//   * DSpark stages are window-only (DSparkAttention asserts ratio 0) and never sources.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/deepseek_v41/config.h"

namespace deepinfer::model {
namespace {

#define DI_VALIDATE(cond, message)                             \
  do {                                                         \
    if (!(cond)) return InvalidArgument(std::string(message)); \
  } while (0)

template <typename T>
std::string ListString(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every id in [0, n_layers) (backbone only) and no duplicates.
Status CheckLayerList(const char* name, const std::vector<int>& ids, int n_layers) {
  for (size_t i = 0; i < ids.size(); ++i) {
    DI_VALIDATE(ids[i] >= 0 && ids[i] < n_layers,
                std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                    " is not a backbone layer (n_layers = " + std::to_string(n_layers) + ")");
    for (size_t k = 0; k < i; ++k) {
      DI_VALIDATE(ids[k] != ids[i], std::string(name) + " lists layer " + std::to_string(ids[i]) +
                                        " twice: " + ListString(ids));
    }
  }
  return Status::Ok();
}

// The last kv source at or before `layer`, or -1.
int KvSourceOf(const ModelConfig& c, int layer) {
  int best = -1;
  for (int s : c.kv_source_layers) {
    if (s <= layer && s > best) best = s;
  }
  return best;
}

Status CheckShape(const ModelConfig& c) {
  struct Positive {
    const char* name;
    int value;
  };
  const Positive positives[] = {
      {"vocab_size", c.vocab_size},
      {"dim (hidden_size)", c.dim},
      {"moe_inter_dim (moe_intermediate_size)", c.moe_inter_dim},
      {"n_layers (num_hidden_layers)", c.n_layers},
      {"n_heads (num_attention_heads)", c.n_heads},
      {"head_dim", c.head_dim},
      {"rope_head_dim (qk_rope_head_dim)", c.rope_head_dim},
      {"q_lora_rank", c.q_lora_rank},
      {"o_groups", c.o_groups},
      {"o_lora_rank", c.o_lora_rank},
      {"window_size (sliding_window)", c.window_size},
      {"n_routed_experts", c.n_routed_experts},
      {"n_activated_experts (num_experts_per_tok)", c.n_activated_experts},
      {"index_n_heads", c.index_n_heads},
      {"index_head_dim", c.index_head_dim},
      {"index_topk", c.index_topk},
      {"hc_mult", c.hc_mult},
      {"hc_sinkhorn_iters", c.hc_sinkhorn_iters},
  };
  for (const Positive& p : positives) {
    DI_VALIDATE(p.value > 0, std::string(p.name) + " must be > 0, got " + std::to_string(p.value));
  }
  DI_VALIDATE(c.n_mtp_layers >= 0, "n_mtp_layers (num_nextn_predict_layers) must be >= 0, got " +
                                       std::to_string(c.n_mtp_layers));
  DI_VALIDATE(c.n_shared_experts == 1,
              "n_shared_experts must be 1 (the official MoE has exactly one shared expert), got " +
                  std::to_string(c.n_shared_experts));
  DI_VALIDATE(c.n_activated_experts <= c.n_routed_experts,
              "n_activated_experts (" + std::to_string(c.n_activated_experts) +
                  ") exceeds n_routed_experts (" + std::to_string(c.n_routed_experts) + ")");
  DI_VALIDATE(c.rope_head_dim % 2 == 0,
              "rope_head_dim (qk_rope_head_dim) must be even (RoPE "
              "rotates lane pairs), got " +
                  std::to_string(c.rope_head_dim));
  DI_VALIDATE(c.head_dim > c.rope_head_dim, "head_dim (" + std::to_string(c.head_dim) +
                                                ") must exceed rope_head_dim (" +
                                                std::to_string(c.rope_head_dim) + ")");
  DI_VALIDATE(c.index_head_dim >= c.rope_head_dim,
              "index_head_dim (" + std::to_string(c.index_head_dim) +
                  ") must be >= rope_head_dim (" + std::to_string(c.rope_head_dim) +
                  "): index q/k rotate their last rope_head_dim lanes");
  DI_VALIDATE(c.n_heads % c.o_groups == 0, "o_groups (" + std::to_string(c.o_groups) +
                                               ") must divide n_heads (" +
                                               std::to_string(c.n_heads) + ")");
  // Window KV is FP8-QDQ'd per 32 lanes, compressed KV FP4 per 16, index q/k FP4 per 32:
  // whatever the weight dtype.
  DI_VALIDATE(c.head_dim % 32 == 0, "head_dim must be a multiple of 32 (FP8 KV blocks), got " +
                                        std::to_string(c.head_dim));
  DI_VALIDATE(c.index_head_dim % 32 == 0,
              "index_head_dim must be a multiple of 32 (FP4 index blocks), got " +
                  std::to_string(c.index_head_dim));
  return Status::Ok();
}

Status CheckScalars(const ModelConfig& c) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  DI_VALIDATE(positive(c.norm_eps),
              "norm_eps (rms_norm_eps) must be > 0, got " + ConfigNumber(c.norm_eps));
  DI_VALIDATE(positive(c.hc_eps), "hc_eps must be > 0, got " + ConfigNumber(c.hc_eps));
  DI_VALIDATE(positive(c.rope_theta), "rope_theta must be > 0, got " + ConfigNumber(c.rope_theta));
  DI_VALIDATE(positive(c.compress_rope_theta),
              "compress_rope_theta must be > 0, got " + ConfigNumber(c.compress_rope_theta));
  DI_VALIDATE(positive(c.route_scale), "route_scale (routed_scaling_factor) must be > 0, got " +
                                           ConfigNumber(c.route_scale));
  DI_VALIDATE(positive(c.gate_temp), "gate_temp must be > 0, got " + ConfigNumber(c.gate_temp));
  DI_VALIDATE(std::isfinite(c.swiglu_limit) && c.swiglu_limit >= 0,
              "swiglu_limit must be >= 0 (0 = no clamp), got " + ConfigNumber(c.swiglu_limit));
  DI_VALIDATE(c.yarn.original_seq_len >= 0,
              "original_seq_len (rope_scaling.original_max_position_embeddings) must be >= 0");
  if (c.yarn.enabled()) {
    DI_VALIDATE(positive(c.yarn.factor), "rope_factor (rope_scaling.factor) must be > 0, got " +
                                             ConfigNumber(c.yarn.factor));
    DI_VALIDATE(positive(c.yarn.beta_fast) && positive(c.yarn.beta_slow),
                "beta_fast and beta_slow must be > 0, got " + ConfigNumber(c.yarn.beta_fast) +
                    " and " + ConfigNumber(c.yarn.beta_slow));
  }
  DI_VALIDATE(c.bos_token_id >= 0 && c.bos_token_id < c.vocab_size,
              "bos_token_id " + std::to_string(c.bos_token_id) + " is outside the vocabulary");
  DI_VALIDATE(c.eos_token_id >= 0 && c.eos_token_id < c.vocab_size,
              "eos_token_id " + std::to_string(c.eos_token_id) + " is outside the vocabulary");
  DI_VALIDATE(c.vision_n_layers >= 0, "vision_n_layers must be >= 0");
  if (c.vision_enabled()) {
    DI_VALIDATE(
        c.image_token_id >= 0 && c.image_token_id < c.vocab_size,
        "image_token_id " + std::to_string(c.image_token_id) + " is outside the vocabulary");
  }
  DI_VALIDATE(c.max_position_embeddings >= 0, "max_position_embeddings must be >= 0");
  return Status::Ok();
}

Status CheckStorage(const ModelConfig& c) {
  DI_VALIDATE(c.dtype != WeightFormat::kFp4, "dtype: dense weights are \"fp8\" or \"bf16\"");
  DI_VALIDATE((c.dtype == WeightFormat::kFp8) == c.quant.quantized(),
              "dtype is " + std::string(WeightFormatName(c.dtype)) +
                  " but the block quantization is " + (c.quant.quantized() ? "present" : "absent"));
  if (c.quant.quantized()) {
    DI_VALIDATE(c.quant.block_rows == 32 && c.quant.block_cols == 32,
                "quantization_config.weight_block_size must be [32, 32] (the FP8 kernels' "
                "block), got [" +
                    std::to_string(c.quant.block_rows) + ", " + std::to_string(c.quant.block_cols) +
                    "]");
    DI_VALIDATE(c.quant.fmt == "e4m3",
                "quantization_config.fmt: expected \"e4m3\", got \"" + c.quant.fmt + "\"");
    DI_VALIDATE(c.quant.scale_fmt == "ue8m0",
                "quantization_config.scale_fmt: expected \"ue8m0\", "
                "got \"" +
                    c.quant.scale_fmt + "\"");
  }
  if (c.dtype != WeightFormat::kBf16 || c.expert_dtype != WeightFormat::kBf16) {
    // Quantized GEMMs quantize their input per 32 elements along K.
    struct K {
      const char* name;
      int value;
    };
    const K ks[] = {{"dim (hidden_size)", c.dim},
                    {"q_lora_rank", c.q_lora_rank},
                    {"o_groups * o_lora_rank", c.o_groups * c.o_lora_rank},
                    {"moe_inter_dim (moe_intermediate_size)", c.moe_inter_dim}};
    for (const K& k : ks) {
      DI_VALIDATE(k.value % 32 == 0, std::string(k.name) +
                                         " must be a multiple of 32 for quantized weights, got " +
                                         std::to_string(k.value));
    }
  }
  return Status::Ok();
}

Status CheckTopology(const ModelConfig& c) {
  const int n_total = c.n_total_layers();
  DI_VALIDATE(static_cast<int>(c.compress_ratios.size()) == n_total,
              "compress_ratios has " + std::to_string(c.compress_ratios.size()) +
                  " entries, expected n_layers + n_mtp_layers = " + std::to_string(c.n_layers) +
                  " + " + std::to_string(c.n_mtp_layers) + " = " + std::to_string(n_total));
  for (int i = 0; i < n_total; ++i) {
    const int r = c.compress_ratios[i];
    DI_VALIDATE(r >= 0 && r <= c.window_size,
                "compress_ratios[" + std::to_string(i) + "] = " + std::to_string(r) +
                    " must be in [0, window_size = " + std::to_string(c.window_size) +
                    "]: a partly filled group is only visible through the window");
    if (i >= c.n_layers) {
      DI_VALIDATE(r == 0, "compress_ratios[" + std::to_string(i) + "] = " + std::to_string(r) +
                              ": DSpark stage mtp." + std::to_string(i - c.n_layers) +
                              " is window-only and needs ratio 0");
    }
  }
  DI_RETURN_IF_ERROR(CheckLayerList("kv_source_layers", c.kv_source_layers, c.n_layers));
  DI_RETURN_IF_ERROR(CheckLayerList("index_source_layers", c.index_source_layers, c.n_layers));
  for (int s : c.kv_source_layers) {
    DI_VALIDATE(c.compress_ratios[s] > 0, "kv_source_layers lists layer " + std::to_string(s) +
                                              ", whose compress ratio is 0 (window only)");
    DI_VALIDATE(Contains(c.index_source_layers, s),
                "kv source layer " + std::to_string(s) +
                    " is not in index_source_layers: a KV source produces the index keys, so it "
                    "must run an indexer");
  }
  for (int s : c.index_source_layers) {
    DI_VALIDATE(c.compress_ratios[s] > 0, "index_source_layers lists layer " + std::to_string(s) +
                                              ", whose compress ratio is 0 (window only)");
  }
  for (int layer = 0; layer < c.n_layers; ++layer) {
    const int r = c.compress_ratios[layer];
    if (r == 0) continue;
    const int source = KvSourceOf(c, layer);
    DI_VALIDATE(source >= 0, "layer " + std::to_string(layer) + " has compress ratio " +
                                 std::to_string(r) +
                                 " but no kv_source_layers entry at or before it (" +
                                 ListString(c.kv_source_layers) + ")");
    DI_VALIDATE(
        c.compress_ratios[source] == r,
        "layer " + std::to_string(layer) + " (compress ratio " + std::to_string(r) +
            ") would read the compressed KV of layer " + std::to_string(source) +
            " (compress ratio " + std::to_string(c.compress_ratios[source]) +
            "); the ratios must match (kv_source_layers = " + ListString(c.kv_source_layers) + ")");
  }
  if (c.candidate_source_layer >= 0) {
    const int cand = c.candidate_source_layer;
    DI_VALIDATE(cand < c.n_layers && Contains(c.index_source_layers, cand),
                "candidate_source_layer " + std::to_string(cand) +
                    " is not an index source (index_source_layers = " +
                    ListString(c.index_source_layers) + ")");
    DI_VALIDATE(c.candidate_topk_blocks > 0, "candidate_topk_blocks must be > 0, got " +
                                                 std::to_string(c.candidate_topk_blocks));
    DI_VALIDATE(c.candidate_block_size > 0,
                "candidate_block_size must be > 0, got " + std::to_string(c.candidate_block_size));
    for (int s : c.index_source_layers) {
      if (s <= cand) continue;
      DI_VALIDATE(KvSourceOf(c, s) == KvSourceOf(c, cand),
                  "index source layer " + std::to_string(s) +
                      " comes after candidate_source_layer " + std::to_string(cand) +
                      " and would apply its candidate mask, but reads the "
                      "KV of layer " +
                      std::to_string(KvSourceOf(c, s)) + " instead of layer " +
                      std::to_string(KvSourceOf(c, cand)));
    }
  }
  return Status::Ok();
}

Status CheckEngram(const ModelConfig& c) {
  if (c.engram_layer_ids.empty()) return Status::Ok();
  DI_RETURN_IF_ERROR(CheckLayerList("engram_layer_ids", c.engram_layer_ids, c.n_layers));
  DI_VALIDATE(c.engram_num_embeddings.size() == c.engram_layer_ids.size(),
              "engram_num_embeddings has " + std::to_string(c.engram_num_embeddings.size()) +
                  " entries but engram_layer_ids has " + std::to_string(c.engram_layer_ids.size()) +
                  " (one table per Engram layer)");
  for (size_t i = 0; i < c.engram_num_embeddings.size(); ++i) {
    DI_VALIDATE(c.engram_num_embeddings[i] > 0,
                "engram_num_embeddings[" + std::to_string(i) + "] must be > 0");
  }
  DI_VALIDATE(c.engram_max_ngram_size >= 2,
              "engram_max_ngram_size must be >= 2 (n-grams of sizes 2..N are hashed), got " +
                  std::to_string(c.engram_max_ngram_size));
  DI_VALIDATE(c.engram_n_heads > 0, "engram_n_heads must be > 0");
  DI_VALIDATE(c.engram_head_dim > 0 && c.engram_head_dim % 32 == 0,
              "engram_head_dim must be a positive multiple of 32 (one scale per 32 columns), "
              "got " +
                  std::to_string(c.engram_head_dim));
  DI_VALIDATE(c.engram_vocab_size > 0, "engram_vocab_size must be > 0");
  DI_VALIDATE(c.engram_compressed_vocab_size > 0, "engram_compressed_vocab_size must be > 0");
  DI_VALIDATE(c.engram_pad_id >= 0 && c.engram_pad_id < c.vocab_size,
              "engram_pad_id " + std::to_string(c.engram_pad_id) + " is outside the vocabulary");
  return Status::Ok();
}

Status CheckDSpark(const ModelConfig& c) {
  if (!c.dspark_enabled()) return Status::Ok();
  DI_VALIDATE(!c.dspark_target_layer_ids.empty(),
              "dspark_target_layer_ids must not be empty when DSpark stages exist");
  DI_RETURN_IF_ERROR(
      CheckLayerList("dspark_target_layer_ids", c.dspark_target_layer_ids, c.n_layers));
  DI_VALIDATE(c.dspark_noise_token_id >= 0 && c.dspark_noise_token_id < c.vocab_size,
              "dspark_noise_token_id " + std::to_string(c.dspark_noise_token_id) +
                  " is outside the vocabulary");
  DI_VALIDATE(c.dspark_markov_rank > 0, "dspark_markov_rank must be > 0");
  DI_VALIDATE(c.dspark_n_routed_experts >= 0 && c.dspark_n_activated_experts >= 0,
              "dspark expert counts must be >= 0");
  const int stage = c.n_layers;
  DI_VALIDATE(c.ActivatedExperts(stage) <= c.RoutedExperts(stage),
              "dspark_n_activated_experts (" + std::to_string(c.ActivatedExperts(stage)) +
                  ") exceeds dspark_n_routed_experts (" + std::to_string(c.RoutedExperts(stage)) +
                  ")");
  return Status::Ok();
}

#undef DI_VALIDATE

}  // namespace

Status ValidateModelConfig(const ModelConfig& c) {
  DI_RETURN_IF_ERROR(CheckShape(c));
  DI_RETURN_IF_ERROR(CheckScalars(c));
  DI_RETURN_IF_ERROR(CheckStorage(c));
  DI_RETURN_IF_ERROR(CheckTopology(c));
  DI_RETURN_IF_ERROR(CheckEngram(c));
  DI_RETURN_IF_ERROR(CheckDSpark(c));
  return Status::Ok();
}

}  // namespace deepinfer::model
