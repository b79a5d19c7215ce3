// ModelConfig: the shape and topology of a DeepSeek-V4.1 checkpoint, read from its config files.
//
// Two spellings of the same model exist and both are accepted:
//   * `config.json` (Hugging Face): a composite with `text_config` and a top-level
//     `quantization_config` (a flat config without `text_config` is accepted too);
//   * `inference/config.json` (the official `ModelArgs` field names).
// Field names below follow the official spelling; the HF spelling is given where it differs.
//
// Every parser validates (ValidateModelConfig) before it returns, so a ModelConfig that came out
// of a parser is internally consistent: BuildLayerDescriptors (layer_descriptor.h) relies on it.
//
// Defaults: a field is optional only where the official `ModelArgs` has a default that is part
// of the model's semantics and the HF configuration classes agree with it:
//   gate_temp 1.0, norm_topk_prob true, engram_pad_id 2, dspark_markov_rank 256,
//   dspark_n_routed_experts / dspark_n_activated_experts 0 (= same as the backbone),
//   vision_n_layers 0, image_token_id 129264, no Engram when engram_layer_ids is absent,
//   no DSpark fields needed when n_mtp_layers is 0.
// Not part of ModelArgs and therefore defaulted from the V4.1 tokenizer / module tree:
//   bos_token_id 0, eos_token_id 1, tie_word_embeddings false, max_position_embeddings 0
//   (= not stated; `inference/config.json` never states it).
// Everything else is required, in particular compress_ratios and the source lists: a guessed
// topology would build a different network without failing. candidate_source_layer must be
// present as well (null or -1 disables it) because the official default (-1, off) and the
// transformers default (the last KV source) disagree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nlohmann/json_fwd.hpp"

namespace deepinfer::model {

// MoE router score function (`score_func` / HF `scoring_func`).
enum class ScoreFunc { kSoftmax, kSigmoid, kSqrtSoftplus };

// Storage format of a family of weights. kBf16 = unquantized; kFp8 = e4m3 with ue8m0 32x32
// tiles; kFp4 = MXFP4 (e2m1 nibble pairs, ue8m0 per 32 along K).
enum class WeightFormat { kBf16, kFp8, kFp4 };

std::string_view ScoreFuncName(ScoreFunc f);        // "sqrtsoftplus", ...
std::string_view WeightFormatName(WeightFormat f);  // "bf16", "fp8", "fp4"
// A number as config messages and tables print it (printf "%g": 1e-06, 0.5, 4096).
std::string ConfigNumber(double v);

// YaRN frequency interpolation of the compressed (ratio > 0) layers. The official code applies it
// whenever original_seq_len > 0, independent of the context length, and never applies an
// attention (mscale) factor.
struct YarnConfig {
  double factor = 0;             // rope_factor / rope_scaling.factor
  int64_t original_seq_len = 0;  // rope_scaling.original_max_position_embeddings
  double beta_fast = 0;
  double beta_slow = 0;

  bool enabled() const { return original_seq_len > 0; }
  bool operator==(const YarnConfig&) const = default;
};

// Block quantization of the dense FP8 weights (`quantization_config`; in inference/config.json
// implied by dtype "fp8": model.py hard-codes 32x32 e4m3/ue8m0). Empty fmt = unquantized.
// Only the dense role uses these blocks: MXFP4 experts and the Engram table are 1x32 whatever
// weight_block_size says.
struct QuantConfig {
  int block_rows = 0;     // weight_block_size[0]
  int block_cols = 0;     // weight_block_size[1]
  std::string fmt;        // "e4m3"
  std::string scale_fmt;  // "ue8m0"

  bool quantized() const { return !fmt.empty(); }
  bool operator==(const QuantConfig&) const = default;
};

struct ModelConfig {
  // --- shape -----------------------------------------------------------------------------
  int vocab_size = 0;
  int dim = 0;            // HF hidden_size
  int moe_inter_dim = 0;  // HF moe_intermediate_size (routed and shared experts)
  int n_layers = 0;       // HF num_hidden_layers: backbone blocks layers.0 .. layers.N-1
  int n_mtp_layers = 0;   // HF num_nextn_predict_layers: DSpark stages mtp.0 .. mtp.S-1

  // --- attention ---------------------------------------------------------------------------
  int n_heads = 0;        // HF num_attention_heads (one shared K=V latent head)
  int head_dim = 0;       // latent width; the last rope_head_dim lanes are rotary
  int rope_head_dim = 0;  // HF qk_rope_head_dim
  int q_lora_rank = 0;
  int o_groups = 0;
  int o_lora_rank = 0;
  int window_size = 0;  // HF sliding_window
  double norm_eps = 0;  // HF rms_norm_eps: every RMSNorm, the hc mix statistic, Engram

  // --- MoE ----------------------------------------------------------------------------------
  int n_routed_experts = 0;
  int n_shared_experts = 0;
  int n_activated_experts = 0;                      // HF num_experts_per_tok
  ScoreFunc score_func = ScoreFunc::kSqrtSoftplus;  // HF scoring_func
  double gate_temp = 1.0;
  bool norm_topk_prob = true;
  double route_scale = 0;   // HF routed_scaling_factor
  double swiglu_limit = 0;  // 0 = no clamp

  // --- compressed sparse attention -----------------------------------------------------------
  // One entry per layer, DSpark stages included (n_layers + n_mtp_layers): 0 = window only,
  // r > 0 = the layer also attends over KV compressed r-to-1.
  std::vector<int> compress_ratios;
  std::vector<int> kv_source_layers;     // HF kv_source_layer_ids: own a compressor
  std::vector<int> index_source_layers;  // HF index_source_layer_ids: run an indexer
  int candidate_source_layer = -1;       // HF candidate_source_layer_id; -1 = off
  int candidate_topk_blocks = 0;
  int candidate_block_size = 0;
  int index_n_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;

  // --- RoPE ---------------------------------------------------------------------------------
  double rope_theta = 0;           // ratio-0 layers and DSpark stages, never YaRN
  double compress_rope_theta = 0;  // ratio > 0 layers, with YaRN
  YarnConfig yarn;

  // --- hyper-connections ----------------------------------------------------------------------
  int hc_mult = 0;
  int hc_sinkhorn_iters = 0;
  double hc_eps = 0;

  // --- Engram ------------------------------------------------------------------------------
  std::vector<int> engram_layer_ids;           // empty = no Engram
  std::vector<int64_t> engram_num_embeddings;  // table rows, one per Engram layer
  int engram_max_ngram_size = 0;
  int64_t engram_vocab_size = 0;  // bucket size the prime search starts from
  int engram_n_heads = 0;
  int engram_head_dim = 0;
  int engram_pad_id = 2;  // HF engram_pad_token_id / engram_pad_id
  int engram_compressed_vocab_size = 0;

  // --- DSpark draft stages ------------------------------------------------------------------
  int dspark_block_size = 0;  // 0 = no stages are built (the official code skips mtp.*)
  int dspark_noise_token_id = 0;
  std::vector<int> dspark_target_layer_ids;  // backbone layers whose block input is tapped
  int dspark_markov_rank = 256;
  int dspark_n_routed_experts = 0;     // 0 = n_routed_experts
  int dspark_n_activated_experts = 0;  // HF dspark_num_experts_per_tok; 0 = n_activated_experts

  // --- storage -------------------------------------------------------------------------------
  WeightFormat dtype = WeightFormat::kBf16;         // dense linears
  WeightFormat expert_dtype = WeightFormat::kBf16;  // routed experts
  QuantConfig quant;

  // --- tokens and the rest ------------------------------------------------------------------
  int bos_token_id = 0;
  int eos_token_id = 1;
  int image_token_id = 129264;
  int vision_n_layers = 0;  // HF vision_config.num_hidden_layers; 0 = no vision tower
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;  // 0 = not stated

  // --- derived -------------------------------------------------------------------------------
  int n_total_layers() const { return n_layers + n_mtp_layers; }
  int nope_head_dim() const { return head_dim - rope_head_dim; }
  bool dspark_enabled() const { return n_mtp_layers > 0 && dspark_block_size > 0; }
  bool vision_enabled() const { return vision_n_layers > 0; }
  // The official get_moe_config: backbone counts for layers < n_layers, DSpark counts (falling
  // back to the backbone's when 0) for the stages.
  int RoutedExperts(int layer) const;
  int ActivatedExperts(int layer) const;

  bool operator==(const ModelConfig&) const = default;
};

// Parse a Hugging Face `config.json` (composite with `text_config`, or flat) and validate it.
StatusOr<ModelConfig> ParseHfConfig(const nlohmann::json& json);
// Parse an official `inference/config.json` and validate it.
StatusOr<ModelConfig> ParseInferenceConfig(const nlohmann::json& json);
// Read DIR/config.json if it exists, else DIR/inference/config.json. Errors name the file.
StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// Cross-field checks (see config_validate.cc). OK for every config a parser returns.
Status ValidateModelConfig(const ModelConfig& config);

}  // namespace deepinfer::model
