// The two config parsers and LoadModelConfig. Cross-field checks are in config_validate.cc.
#include "model/deepseek_v41/config.h"

#include <cstdio>
#include <filesystem>

#include "io/json_file.h"
#include "model/deepseek_v41/config_json.h"

namespace deepinfer::model {

using internal::DescribeJsonValue;
using internal::FieldReader;
using nlohmann::json;

std::string ConfigNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string_view ScoreFuncName(ScoreFunc f) {
  switch (f) {
    case ScoreFunc::kSoftmax:
      return "softmax";
    case ScoreFunc::kSigmoid:
      return "sigmoid";
    case ScoreFunc::kSqrtSoftplus:
      return "sqrtsoftplus";
  }
  return "?";
}

std::string_view WeightFormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::kBf16:
      return "bf16";
    case WeightFormat::kFp8:
      return "fp8";
    case WeightFormat::kFp4:
      return "fp4";
  }
  return "?";
}

int ModelConfig::RoutedExperts(int layer) const {
  if (layer < n_layers || dspark_n_routed_experts == 0) return n_routed_experts;
  return dspark_n_routed_experts;
}

int ModelConfig::ActivatedExperts(int layer) const {
  if (layer < n_layers || dspark_n_activated_experts == 0) return n_activated_experts;
  return dspark_n_activated_experts;
}

namespace {

void ParseScoreFunc(FieldReader& r, const char* key, ScoreFunc* out) {
  std::string name;
  r.Required({key}, &name);
  if (!r.status().ok()) return;
  if (name == "softmax") {
    *out = ScoreFunc::kSoftmax;
  } else if (name == "sigmoid") {
    *out = ScoreFunc::kSigmoid;
  } else if (name == "sqrtsoftplus") {
    *out = ScoreFunc::kSqrtSoftplus;
  } else {
    r.Fail(r.Name(key) + ": expected \"softmax\", \"sigmoid\" or \"sqrtsoftplus\", got \"" + name +
           "\"");
  }
}

// The dense 32x32 e4m3/ue8m0 layout that model.py hard-codes for dtype "fp8".
QuantConfig OfficialFp8Quant() { return QuantConfig{32, 32, "e4m3", "ue8m0"}; }

// `expert_dtype`: "fp4" (MXFP4), "fp8", or null (= the dense dtype, as in model.py).
void ParseExpertDtype(FieldReader& r, const json& object, const char* key, WeightFormat dense,
                      WeightFormat* out) {
  auto it = object.find(key);
  if (it == object.end()) return;  // keep the caller's default
  if (it->is_null()) {
    *out = dense;
    return;
  }
  std::string name;
  r.Required({key}, &name);
  if (!r.status().ok()) return;
  if (name == "fp4") {
    *out = WeightFormat::kFp4;
  } else if (name == "fp8") {
    *out = WeightFormat::kFp8;
  } else {
    r.Fail(r.Name(key) + ": expected \"fp4\", \"fp8\" or null, got \"" + name + "\"");
  }
}

// Engram fields: required only when engram_layer_ids is non-empty.
void ReadEngram(FieldReader& r, ModelConfig& c, const char* pad_key, const char* pad_alias) {
  r.Optional({"engram_layer_ids"}, &c.engram_layer_ids);
  if (c.engram_layer_ids.empty()) return;
  r.Required({"engram_num_embeddings"}, &c.engram_num_embeddings);
  r.Required({"engram_max_ngram_size"}, &c.engram_max_ngram_size);
  r.Required({"engram_vocab_size"}, &c.engram_vocab_size);
  r.Required({"engram_n_heads"}, &c.engram_n_heads);
  r.Required({"engram_head_dim"}, &c.engram_head_dim);
  r.Optional({pad_key, pad_alias}, &c.engram_pad_id);
  r.Required({"engram_compressed_vocab_size"}, &c.engram_compressed_vocab_size);
}

// DSpark fields: required only when there are stages to build.
void ReadDSpark(FieldReader& r, ModelConfig& c, const char* activated_key,
                const char* activated_alias) {
  if (c.n_mtp_layers <= 0) return;
  r.Required({"dspark_block_size"}, &c.dspark_block_size);
  if (c.dspark_block_size <= 0) return;  // the official code then builds no mtp.* stages
  r.Required({"dspark_noise_token_id"}, &c.dspark_noise_token_id);
  r.Required({"dspark_target_layer_ids"}, &c.dspark_target_layer_ids);
  r.Optional({"dspark_markov_rank"}, &c.dspark_markov_rank);
  r.Optional({"dspark_n_routed_experts"}, &c.dspark_n_routed_experts);
  r.Optional({activated_key, activated_alias}, &c.dspark_n_activated_experts);
}

// candidate_source_layer must be present; null or a negative id switches it off.
void ReadCandidates(FieldReader& r, const json& object, const char* key, ModelConfig& c) {
  auto it = object.find(key);
  if (it == object.end()) {
    r.Fail(r.Name(key) +
           " is missing (required; null or -1 disables the candidate pre-filter, which the "
           "official code and transformers default differently)");
    return;
  }
  if (!it->is_null()) r.Required({key}, &c.candidate_source_layer);
  if (c.candidate_source_layer < 0) {
    c.candidate_source_layer = -1;
    return;
  }
  r.Required({"candidate_topk_blocks"}, &c.candidate_topk_blocks);
  r.Required({"candidate_block_size"}, &c.candidate_block_size);
}

Status Finish(const FieldReader& r, ModelConfig& c) {
  DI_RETURN_IF_ERROR(r.status());
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ParseInferenceConfig(const json& j) {
  if (!j.is_object()) {
    return InvalidArgument("expected a JSON object at the top level, got " + DescribeJsonValue(j));
  }
  FieldReader r(j, "");
  ModelConfig c;
  r.Required({"vocab_size"}, &c.vocab_size);
  r.Required({"dim"}, &c.dim);
  r.Required({"moe_inter_dim"}, &c.moe_inter_dim);
  r.Required({"n_layers"}, &c.n_layers);
  r.Required({"n_mtp_layers"}, &c.n_mtp_layers);
  r.Required({"n_heads"}, &c.n_heads);
  r.Required({"head_dim"}, &c.head_dim);
  r.Required({"rope_head_dim"}, &c.rope_head_dim);
  r.Required({"q_lora_rank"}, &c.q_lora_rank);
  r.Required({"o_groups"}, &c.o_groups);
  r.Required({"o_lora_rank"}, &c.o_lora_rank);
  r.Required({"window_size"}, &c.window_size);
  r.Required({"norm_eps"}, &c.norm_eps);

  r.Required({"n_routed_experts"}, &c.n_routed_experts);
  r.Required({"n_shared_experts"}, &c.n_shared_experts);
  r.Required({"n_activated_experts"}, &c.n_activated_experts);
  ParseScoreFunc(r, "score_func", &c.score_func);
  r.Optional({"gate_temp"}, &c.gate_temp);
  r.Optional({"norm_topk_prob"}, &c.norm_topk_prob);
  r.Required({"route_scale"}, &c.route_scale);
  r.Required({"swiglu_limit"}, &c.swiglu_limit);

  r.Required({"compress_ratios"}, &c.compress_ratios);
  r.Required({"kv_source_layers"}, &c.kv_source_layers);
  r.Required({"index_source_layers"}, &c.index_source_layers);
  ReadCandidates(r, j, "candidate_source_layer", c);
  r.Required({"index_n_heads"}, &c.index_n_heads);
  r.Required({"index_head_dim"}, &c.index_head_dim);
  r.Required({"index_topk"}, &c.index_topk);

  r.Required({"rope_theta"}, &c.rope_theta);
  r.Required({"compress_rope_theta"}, &c.compress_rope_theta);
  r.Optional({"original_seq_len"}, &c.yarn.original_seq_len);  // 0 / absent: no YaRN
  if (c.yarn.original_seq_len > 0) {
    r.Required({"rope_factor"}, &c.yarn.factor);
    r.Required({"beta_fast"}, &c.yarn.beta_fast);
    r.Required({"beta_slow"}, &c.yarn.beta_slow);
  }

  r.Required({"hc_mult"}, &c.hc_mult);
  r.Required({"hc_sinkhorn_iters"}, &c.hc_sinkhorn_iters);
  r.Required({"hc_eps"}, &c.hc_eps);

  ReadEngram(r, c, "engram_pad_id", "engram_pad_token_id");
  ReadDSpark(r, c, "dspark_n_activated_experts", "dspark_num_experts_per_tok");

  // Storage: ModelArgs defaults are dtype "fp8", expert_dtype "fp4".
  std::string dtype = "fp8";
  r.Optional({"dtype"}, &dtype);
  if (dtype == "fp8") {
    c.dtype = WeightFormat::kFp8;
    c.quant = OfficialFp8Quant();
  } else if (dtype == "bf16") {
    c.dtype = WeightFormat::kBf16;
  } else if (r.status().ok()) {
    r.Fail("dtype: expected \"fp8\" or \"bf16\", got \"" + dtype + "\"");
  }
  c.expert_dtype = WeightFormat::kFp4;
  ParseExpertDtype(r, j, "expert_dtype", c.dtype, &c.expert_dtype);

  r.Optional({"image_token_id"}, &c.image_token_id);
  r.Optional({"vision_n_layers"}, &c.vision_n_layers);
  // Not in ModelArgs: the V4.1 tokenizer's ids and the official (untied) module tree.
  r.Optional({"bos_token_id"}, &c.bos_token_id);
  r.Optional({"eos_token_id"}, &c.eos_token_id);
  r.Optional({"tie_word_embeddings"}, &c.tie_word_embeddings);
  DI_RETURN_IF_ERROR(Finish(r, c));
  return c;
}

StatusOr<ModelConfig> ParseHfConfig(const json& j) {
  if (!j.is_object()) {
    return InvalidArgument("expected a JSON object at the top level, got " + DescribeJsonValue(j));
  }
  const json* text = &j;
  std::string prefix;
  if (auto it = j.find("text_config"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      return InvalidArgument("text_config: expected an object, got " + DescribeJsonValue(*it));
    }
    text = &*it;
    prefix = "text_config.";
  }
  FieldReader r(*text, prefix);
  FieldReader top(j, "");
  ModelConfig c;

  // Guards against V4-era or generic-MLA fields that would mean a different network.
  int kv_heads = 1;
  r.Optional({"num_key_value_heads"}, &kv_heads);
  if (kv_heads != 1) r.Fail(r.Name("num_key_value_heads") + ": V4.1 has one shared K=V head");
  std::string act = "silu";
  r.Optional({"hidden_act"}, &act);
  if (act != "silu") r.Fail(r.Name("hidden_act") + ": expected \"silu\", got \"" + act + "\"");
  std::string topk_method = "noaux_tc";
  r.Optional({"topk_method"}, &topk_method);
  if (topk_method != "noaux_tc") {
    r.Fail(r.Name("topk_method") + ": expected \"noaux_tc\", got \"" + topk_method + "\"");
  }
  int n_group = 1;
  r.Optional({"n_group"}, &n_group);
  if (n_group > 1) r.Fail(r.Name("n_group") + ": group-limited routing is not part of V4.1");

  r.Required({"vocab_size"}, &c.vocab_size);
  r.Required({"hidden_size"}, &c.dim);
  r.Required({"moe_intermediate_size"}, &c.moe_inter_dim);
  r.Required({"num_hidden_layers"}, &c.n_layers);
  r.Required({"num_nextn_predict_layers"}, &c.n_mtp_layers);
  r.Required({"num_attention_heads"}, &c.n_heads);
  r.Required({"head_dim"}, &c.head_dim);
  r.Required({"qk_rope_head_dim"}, &c.rope_head_dim);
  r.Required({"q_lora_rank"}, &c.q_lora_rank);
  r.Required({"o_groups"}, &c.o_groups);
  r.Required({"o_lora_rank"}, &c.o_lora_rank);
  r.Required({"sliding_window"}, &c.window_size);
  r.Required({"rms_norm_eps"}, &c.norm_eps);

  r.Required({"n_routed_experts"}, &c.n_routed_experts);
  r.Required({"n_shared_experts"}, &c.n_shared_experts);
  r.Required({"num_experts_per_tok"}, &c.n_activated_experts);
  ParseScoreFunc(r, "scoring_func", &c.score_func);
  r.Optional({"gate_temp"}, &c.gate_temp);
  r.Optional({"norm_topk_prob"}, &c.norm_topk_prob);
  r.Required({"routed_scaling_factor"}, &c.route_scale);
  r.Required({"swiglu_limit"}, &c.swiglu_limit);

  r.Required({"compress_ratios"}, &c.compress_ratios);
  r.Required({"kv_source_layer_ids"}, &c.kv_source_layers);
  r.Required({"index_source_layer_ids"}, &c.index_source_layers);
  ReadCandidates(r, *text, "candidate_source_layer_id", c);
  r.Required({"index_n_heads"}, &c.index_n_heads);
  r.Required({"index_head_dim"}, &c.index_head_dim);
  r.Required({"index_topk"}, &c.index_topk);

  r.Required({"rope_theta"}, &c.rope_theta);
  r.Required({"compress_rope_theta"}, &c.compress_rope_theta);
  if (const json* rs = r.Find({"rope_scaling"})) {  // absent / null: no YaRN
    if (!rs->is_object()) {
      r.Fail(r.Name("rope_scaling") + ": expected an object, got " + DescribeJsonValue(*rs));
    } else {
      FieldReader y(*rs, prefix + "rope_scaling.");
      std::string type;
      y.Required({"rope_type", "type"}, &type);
      if (y.status().ok() && type != "yarn") {
        y.Fail(y.Name("rope_type") + ": only \"yarn\" is supported, got \"" + type + "\"");
      }
      y.Required({"original_max_position_embeddings"}, &c.yarn.original_seq_len);
      y.Required({"factor"}, &c.yarn.factor);
      y.Required({"beta_fast"}, &c.yarn.beta_fast);
      y.Required({"beta_slow"}, &c.yarn.beta_slow);
      if (!y.status().ok()) r.Fail(y.status().message());
    }
  }

  r.Required({"hc_mult"}, &c.hc_mult);
  r.Required({"hc_sinkhorn_iters"}, &c.hc_sinkhorn_iters);
  r.Required({"hc_eps"}, &c.hc_eps);

  ReadEngram(r, c, "engram_pad_token_id", "engram_pad_id");
  ReadDSpark(r, c, "dspark_num_experts_per_tok", "dspark_n_activated_experts");

  // Storage: the top-level quantization_config (TRT-LLM also copies it into text_config).
  const json* q = top.Find({"quantization_config"});
  if (q == nullptr) q = r.Find({"quantization_config"});
  if (q == nullptr) {
    c.dtype = WeightFormat::kBf16;
    c.expert_dtype = WeightFormat::kBf16;
  } else if (!q->is_object()) {
    r.Fail("quantization_config: expected an object, got " + DescribeJsonValue(*q));
  } else {
    FieldReader qr(*q, "quantization_config.");
    std::string method;
    qr.Required({"quant_method"}, &method);
    if (qr.status().ok() && method != "fp8") {
      qr.Fail("quantization_config.quant_method: expected \"fp8\", got \"" + method + "\"");
    }
    std::string scheme = "dynamic";
    qr.Optional({"activation_scheme"}, &scheme);
    if (scheme != "dynamic") {
      qr.Fail("quantization_config.activation_scheme: expected \"dynamic\", got \"" + scheme +
              "\"");
    }
    c.quant.fmt = "e4m3";
    c.quant.scale_fmt = "ue8m0";
    qr.Optional({"fmt"}, &c.quant.fmt);
    qr.Optional({"scale_fmt"}, &c.quant.scale_fmt);
    std::vector<int> block;
    qr.Required({"weight_block_size"}, &block);
    if (qr.status().ok()) {
      if (block.size() != 2) {
        qr.Fail("quantization_config.weight_block_size: expected 2 entries, got " +
                std::to_string(block.size()));
      } else {
        c.quant.block_rows = block[0];
        c.quant.block_cols = block[1];
      }
    }
    c.dtype = WeightFormat::kFp8;
    // The release's HF config does not name the routed-expert format; its experts are MXFP4
    // (TRT-LLM's parse_quantization_layout defaults the same way). The loader confirms it
    // from the tensor dtypes.
    c.expert_dtype = WeightFormat::kFp4;
    ParseExpertDtype(qr, *q, "expert_dtype", c.dtype, &c.expert_dtype);
    if (!qr.status().ok()) r.Fail(qr.status().message());
  }

  // Token ids and tying may sit at the top level, in text_config, or both (text_config wins).
  for (FieldReader* reader : {&top, &r}) {
    reader->Optional({"image_token_id"}, &c.image_token_id);
    reader->Optional({"bos_token_id"}, &c.bos_token_id);
    reader->Optional({"eos_token_id"}, &c.eos_token_id);
    reader->Optional({"tie_word_embeddings"}, &c.tie_word_embeddings);
    if (!reader->status().ok()) r.Fail(reader->status().message());
  }
  r.Optional({"max_position_embeddings"}, &c.max_position_embeddings);
  if (const json* v = top.Find({"vision_config"})) {  // absent / null: no vision tower
    if (!v->is_object()) {
      r.Fail("vision_config: expected an object, got " + DescribeJsonValue(*v));
    } else {
      FieldReader vr(*v, "vision_config.");
      vr.Required({"num_hidden_layers"}, &c.vision_n_layers);
      if (!vr.status().ok()) r.Fail(vr.status().message());
    }
  }
  DI_RETURN_IF_ERROR(Finish(r, c));
  return c;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path hf_path = fs::path(dir) / "config.json";
  const fs::path inference_path = fs::path(dir) / "inference" / "config.json";
  std::error_code ec;
  const bool has_hf = fs::exists(hf_path, ec);
  const fs::path path = has_hf ? hf_path : inference_path;
  if (!has_hf && !fs::exists(inference_path, ec)) {
    return NotFound(dir + ": no config.json or inference/config.json");
  }
  DI_ASSIGN_OR_RETURN(json j, io::LoadJsonFile(path.string()));
  StatusOr<ModelConfig> config = has_hf ? ParseHfConfig(j) : ParseInferenceConfig(j);
  if (!config.ok()) {
    return Status(config.status().code(), path.string() + ": " + config.status().message());
  }
  return config;
}

}  // namespace deepinfer::model
