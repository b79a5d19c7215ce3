#include "model/deepseek_v41/weight_manifest.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "core/tensor_view.h"
#include "io/checkpoint.h"
#include "io/progress.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Gains and norm means below are those the v41-tiny-a fixture was drawn with (measured on its
// file: projection RMS * sqrt(fan_in), norm means), which its README says follow the released
// checkpoint's statistics.
class ManifestBuilder {
 public:
  explicit ManifestBuilder(const ModelConfig& c) : c_(c) {
    dense_ = c.dtype == WeightFormat::kFp8 ? WeightLayout::kFp8Tile32 : WeightLayout::kBf16;
    switch (c.expert_dtype) {
      case WeightFormat::kFp4:
        expert_ = WeightLayout::kMxfp4;
        break;
      case WeightFormat::kFp8:
        expert_ = WeightLayout::kFp8Tile32;
        break;
      case WeightFormat::kBf16:
        expert_ = WeightLayout::kBf16;
        break;
    }
    // An unquantized checkpoint has no reason to quantize the Engram table either.
    table_ = c.dtype == WeightFormat::kFp8 ? WeightLayout::kFp8Row32 : WeightLayout::kBf16;
  }

  std::vector<WeightSpec> Build() {
    const std::vector<LayerDescriptor> layers = BuildLayerDescriptors(c_);
    Add("embed.weight", WeightLayout::kBf16, {c_.vocab_size, c_.dim}, WeightKind::kEmbedding,
        0.12f);
    for (const LayerDescriptor& d : layers) {
      if (!d.is_mtp) AddBlock(d);
    }
    Add("norm.weight", WeightLayout::kBf16, {c_.dim}, WeightKind::kNorm, 1.0f);
    Add("head.weight", WeightLayout::kBf16, {c_.vocab_size, c_.dim}, WeightKind::kProjection, 1.0f);
    for (const LayerDescriptor& d : layers) {
      if (d.is_mtp) AddBlock(d);
    }
    return std::move(out_);
  }

 private:
  WeightSpec& Add(std::string name, WeightLayout layout, std::vector<int64_t> shape,
                  WeightKind kind, float gain, float offset = 0.0f) {
    WeightSpec s;
    s.name = std::move(name);
    s.layout = layout;
    s.shape = std::move(shape);
    s.kind = kind;
    s.gain = gain;
    s.offset = offset;
    s.layer = layer_;
    s.role = RoleOfTensorName(s.name);
    out_.push_back(std::move(s));
    return out_.back();
  }

  void AddBlock(const LayerDescriptor& d) {
    layer_ = d.index;
    const std::string p = d.name + ".";
    const int64_t dim = c_.dim;
    const int64_t hc = c_.hc_mult;
    const int64_t mix = (2 + hc) * hc;
    const WeightLayout bf16 = WeightLayout::kBf16;
    const WeightLayout f32 = WeightLayout::kF32;
    // Hyper-connection mixes.
    Add(p + "hc_attn_fn", f32, {mix, hc * dim}, WeightKind::kProjection, 1.0f);
    Add(p + "hc_ffn_fn", f32, {mix, hc * dim}, WeightKind::kProjection, 1.0f);
    Add(p + "hc_attn_base", f32, {mix}, WeightKind::kGaussian, 0.5f);
    Add(p + "hc_ffn_base", f32, {mix}, WeightKind::kGaussian, 0.5f);
    Add(p + "hc_attn_scale", f32, {3}, WeightKind::kGaussian, 0.5f);
    Add(p + "hc_ffn_scale", f32, {3}, WeightKind::kGaussian, 0.5f);
    // Attention.
    const int64_t heads_dim = int64_t{c_.n_heads} * c_.head_dim;
    const int64_t o_rank = int64_t{c_.o_groups} * c_.o_lora_rank;
    Add(p + "attn.attn_sink", f32, {c_.n_heads}, WeightKind::kGaussian, 0.5f);
    Add(p + "attn.wq_a.weight", dense_, {c_.q_lora_rank, dim}, WeightKind::kProjection, 1.6f);
    Add(p + "attn.q_norm.weight", bf16, {c_.q_lora_rank}, WeightKind::kNorm, 0.96f);
    Add(p + "attn.wq_b.weight", dense_, {heads_dim, c_.q_lora_rank}, WeightKind::kProjection,
        0.95f);
    Add(p + "attn.wkv.weight", dense_, {c_.head_dim, dim}, WeightKind::kProjection, 1.8f);
    Add(p + "attn.kv_norm.weight", bf16, {c_.head_dim}, WeightKind::kNorm, 0.39f);
    Add(p + "attn.wo_a.weight", dense_, {o_rank, heads_dim / c_.o_groups}, WeightKind::kProjection,
        1.6f);
    Add(p + "attn.wo_b.weight", dense_, {dim, o_rank}, WeightKind::kProjection, 1.9f);
    if (d.owns_compressor) {
      Add(p + "attn.compressor.norm.weight", bf16, {c_.head_dim}, WeightKind::kNorm, 0.6f);
      Add(p + "attn.compressor.wkv.weight", bf16, {c_.head_dim, dim}, WeightKind::kProjection,
          1.8f);
      // A large gain so that the pooling softmax over the group is not flat.
      if (d.compressor_pools) {
        Add(p + "attn.compressor.wgate.weight", bf16, {c_.head_dim, dim}, WeightKind::kProjection,
            40.0f);
      }
    }
    if (d.has_indexer) {
      Add(p + "attn.indexer.wq_b.weight", dense_,
          {int64_t{c_.index_n_heads} * c_.index_head_dim, c_.q_lora_rank}, WeightKind::kProjection,
          0.95f);
      Add(p + "attn.indexer.weights_proj.weight", bf16, {c_.index_n_heads, dim},
          WeightKind::kProjection, 1.0f);
    }
    if (d.owns_compressor) {
      Add(p + "attn.indexer.wk.weight", bf16, {c_.index_head_dim, c_.head_dim},
          WeightKind::kProjection, 1.0f);
      Add(p + "attn.indexer.k_norm.weight", bf16, {c_.index_head_dim}, WeightKind::kNorm, 0.5f);
    }
    // MoE.
    const int64_t inter = c_.moe_inter_dim;
    Add(p + "ffn.gate.weight", bf16, {d.n_routed_experts, dim}, WeightKind::kProjection, 2.9f);
    Add(p + "ffn.gate.bias", f32, {d.n_routed_experts}, WeightKind::kGaussian, 0.43f, 0.33f);
    for (int e = 0; e < d.n_routed_experts; ++e) {
      const std::string ep = p + "ffn.experts." + std::to_string(e) + ".";
      Add(ep + "w1.weight", expert_, {inter, dim}, WeightKind::kExpert, 1.5f).expert = e;
      Add(ep + "w2.weight", expert_, {dim, inter}, WeightKind::kExpert, 1.0f).expert = e;
      Add(ep + "w3.weight", expert_, {inter, dim}, WeightKind::kExpert, 1.5f).expert = e;
    }
    if (d.n_shared_experts > 0) {
      const int64_t shared = inter * d.n_shared_experts;
      Add(p + "ffn.shared_experts.w1.weight", dense_, {shared, dim}, WeightKind::kProjection, 1.5f);
      Add(p + "ffn.shared_experts.w2.weight", dense_, {dim, shared}, WeightKind::kProjection,
          1.05f);
      Add(p + "ffn.shared_experts.w3.weight", dense_, {shared, dim}, WeightKind::kProjection, 1.5f);
    }
    // Engram (only its q*k product is used; both are norm-like, mean 1).
    if (d.has_engram()) {
      const int64_t rows = c_.engram_num_embeddings[d.engram_index];
      const int64_t in =
          int64_t{c_.engram_n_heads} * c_.engram_head_dim * (c_.engram_max_ngram_size - 1);
      Add(p + "engram.q_weight", bf16, {hc, dim}, WeightKind::kNorm, 1.0f);
      Add(p + "engram.k_weight", bf16, {hc, dim}, WeightKind::kNorm, 1.0f);
      Add(p + "engram.embed.weight", table_, {rows, c_.engram_head_dim}, WeightKind::kEngramTable,
          0.3f);
      Add(p + "engram.wkv.weight", dense_, {(hc + 1) * dim, in}, WeightKind::kProjection, 1.8f);
    }
    Add(p + "attn_norm.weight", bf16, {dim}, WeightKind::kNorm, 0.025f);
    Add(p + "ffn_norm.weight", bf16, {dim}, WeightKind::kNorm, 0.2f);
    if (d.has_main_proj) {
      const int64_t taps = static_cast<int64_t>(c_.dspark_target_layer_ids.size());
      Add(p + "main_proj.weight", dense_, {dim, taps * dim}, WeightKind::kProjection, 1.0f);
      Add(p + "main_norm.weight", bf16, {dim}, WeightKind::kNorm, 1.0f);
    }
    if (d.has_draft_head) {
      const int64_t rank = c_.dspark_markov_rank;
      Add(p + "norm.weight", bf16, {dim}, WeightKind::kNorm, 1.0f);
      Add(p + "markov_head.embed.weight", bf16, {c_.vocab_size, rank}, WeightKind::kEmbedding,
          0.12f);
      Add(p + "markov_head.head.weight", bf16, {c_.vocab_size, rank}, WeightKind::kProjection,
          1.0f);
      Add(p + "confidence_head.proj.weight", bf16, {1, dim + rank}, WeightKind::kProjection, 1.0f);
    }
    layer_ = -1;
  }

  const ModelConfig& c_;
  WeightLayout dense_ = WeightLayout::kFp8Tile32;
  WeightLayout expert_ = WeightLayout::kMxfp4;
  WeightLayout table_ = WeightLayout::kFp8Row32;
  int layer_ = -1;
  std::vector<WeightSpec> out_;
};

std::string ShapeText(const std::vector<int64_t>& shape) {
  TensorView v;
  v.shape = shape;
  return v.ShapeString();
}

std::string DTypeShape(DType t, const std::vector<int64_t>& shape) {
  return std::string(DTypeName(t)) + " " + ShapeText(shape);
}

// "  <title> (n):\n    a\n    b\n    … and k more\n"
void AppendList(std::string* out, std::string_view title, std::vector<std::string> lines) {
  if (lines.empty()) return;
  std::sort(lines.begin(), lines.end());
  *out += "\n  " + std::string(title) + " (" + std::to_string(lines.size()) + "):";
  const size_t shown = std::min(lines.size(), kMaxListed);
  for (size_t i = 0; i < shown; ++i) *out += "\n    " + lines[i];
  if (lines.size() > shown) {
    *out += "\n    ... and " + std::to_string(lines.size() - shown) + " more";
  }
}

}  // namespace

std::string_view WeightLayoutName(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::kBf16:
      return "bf16";
    case WeightLayout::kF32:
      return "f32";
    case WeightLayout::kFp8Tile32:
      return "fp8-tile32";
    case WeightLayout::kMxfp4:
      return "mxfp4";
    case WeightLayout::kFp8Row32:
      return "fp8-row32";
  }
  return "?";
}

std::string_view WeightRoleName(WeightRole role) {
  switch (role) {
    case WeightRole::kAttention:
      return "attention";
    case WeightRole::kExperts:
      return "experts";
    case WeightRole::kEngram:
      return "engram";
    case WeightRole::kDspark:
      return "dspark";
    case WeightRole::kOther:
      return "other";
    case WeightRole::kVision:
      return "vision";
  }
  return "?";
}

bool WeightSpec::quantized() const {
  return layout == WeightLayout::kFp8Tile32 || layout == WeightLayout::kMxfp4 ||
         layout == WeightLayout::kFp8Row32;
}

std::string WeightSpec::ScaleName() const {
  CHECK(quantized() && EndsWith(name, ".weight")) << name;
  return name.substr(0, name.size() - 6) + "scale";
}

uint64_t TensorSpec::ByteSize() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * DTypeSize(dtype);
}

std::vector<WeightSpec> ExpectedWeights(const ModelConfig& config) {
  return ManifestBuilder(config).Build();
}

std::vector<TensorSpec> ExpectedTensors(const std::vector<WeightSpec>& weights) {
  std::vector<TensorSpec> out;
  out.reserve(weights.size() * 2);
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightSpec& w = weights[i];
    TensorSpec t;
    t.name = w.name;
    t.role = w.role;
    t.weight = static_cast<int>(i);
    t.shape = w.shape;
    TensorSpec s = t;
    s.name = w.quantized() ? w.ScaleName() : std::string();
    s.is_scale = true;
    s.dtype = DType::kF8E8M0;
    switch (w.layout) {
      case WeightLayout::kBf16:
        t.dtype = DType::kBF16;
        break;
      case WeightLayout::kF32:
        t.dtype = DType::kF32;
        break;
      case WeightLayout::kFp8Tile32:
        t.dtype = DType::kF8E4M3;
        s.shape = {CeilDiv(w.shape[0], 32), CeilDiv(w.shape[1], 32)};
        break;
      case WeightLayout::kMxfp4:
        t.dtype = DType::kI8;
        t.shape = {w.shape[0], CeilDiv(w.shape[1], 2)};
        s.shape = {w.shape[0], CeilDiv(w.shape[1], 32)};
        break;
      case WeightLayout::kFp8Row32:
        t.dtype = DType::kF8E4M3;
        s.shape = {w.shape[0], CeilDiv(w.shape[1], 32)};
        break;
    }
    out.push_back(std::move(t));
    if (w.quantized()) out.push_back(std::move(s));
  }
  return out;
}

bool IsVisionTensorName(std::string_view name) {
  return StartsWith(name, "vision.") || StartsWith(name, "aligner.") ||
         StartsWith(name, "image_start") || StartsWith(name, "image_end") ||
         StartsWith(name, "image_newline") || EndsWith(name, ".ffn.gate.bias_vl");
}

WeightRole RoleOfTensorName(std::string_view name) {
  if (IsVisionTensorName(name)) return WeightRole::kVision;
  if (StartsWith(name, "mtp.")) return WeightRole::kDspark;
  if (!StartsWith(name, "layers.")) return WeightRole::kOther;
  const size_t dot = name.find('.', 7);
  if (dot == std::string_view::npos) return WeightRole::kOther;
  const std::string_view rest = name.substr(dot + 1);
  if (StartsWith(rest, "attn.")) return WeightRole::kAttention;
  if (StartsWith(rest, "ffn.experts.")) return WeightRole::kExperts;
  if (StartsWith(rest, "engram.")) return WeightRole::kEngram;
  return WeightRole::kOther;
}

uint64_t RoleBytes::total() const {
  uint64_t t = 0;
  for (uint64_t b : bytes) t += b;
  return t;
}

RoleBytes ManifestBytes(const std::vector<TensorSpec>& tensors) {
  RoleBytes r;
  for (const TensorSpec& t : tensors) {
    r.bytes[static_cast<int>(t.role)] += t.ByteSize();
    ++r.tensors[static_cast<int>(t.role)];
  }
  return r;
}

RoleBytes CheckpointBytes(const io::Checkpoint& checkpoint) {
  RoleBytes r;
  for (std::string_view name : checkpoint.names()) {
    const int role = static_cast<int>(RoleOfTensorName(name));
    r.bytes[role] += checkpoint.Find(name)->n_bytes;
    ++r.tensors[role];
  }
  return r;
}

std::string DescribeRoleBytes(const RoleBytes& bytes) {
  std::string s;
  char line[160];
  uint64_t n = 0;
  auto add = [&](std::string_view name, uint64_t b, uint64_t count) {
    std::snprintf(line, sizeof(line), "%-10.*s %11s %16llu bytes %8llu tensors\n",
                  static_cast<int>(name.size()), name.data(),
                  io::ProgressBar::FormatBytes(b).c_str(), static_cast<unsigned long long>(b),
                  static_cast<unsigned long long>(count));
    s += line;
  };
  for (int i = 0; i < kNumWeightRoles; ++i) {
    if (bytes.tensors[i] == 0) continue;
    add(WeightRoleName(static_cast<WeightRole>(i)), bytes.bytes[i], bytes.tensors[i]);
    n += bytes.tensors[i];
  }
  add("total", bytes.total(), n);
  return s;
}

Status ValidateCheckpoint(const io::Checkpoint& checkpoint, const ModelConfig& config) {
  const std::vector<TensorSpec> expected = ExpectedTensors(config);
  std::unordered_map<std::string_view, const TensorSpec*> by_name;
  by_name.reserve(expected.size());
  for (const TensorSpec& t : expected) by_name.emplace(t.name, &t);

  std::vector<std::string> unexpected, mismatched, missing;
  std::unordered_map<std::string_view, bool> found;
  found.reserve(expected.size());
  for (std::string_view name : checkpoint.names()) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (config.vision_enabled() && IsVisionTensorName(name)) continue;
      const TensorView* v = checkpoint.Find(name);
      unexpected.push_back(std::string(name) + " (" + DTypeShape(v->dtype, v->shape) + ")" +
                           (IsVisionTensorName(name) ? " [vision tensor; the config has no vision "
                                                       "tower]"
                                                     : ""));
      continue;
    }
    found[name] = true;
    const TensorSpec& want = *it->second;
    const TensorView* v = checkpoint.Find(name);
    if (v->dtype != want.dtype || v->shape != want.shape) {
      mismatched.push_back(std::string(name) + ": expected " + DTypeShape(want.dtype, want.shape) +
                           ", found " + DTypeShape(v->dtype, v->shape));
    }
  }
  for (const TensorSpec& t : expected) {
    if (!found.count(t.name)) missing.push_back(t.name + " (" + DTypeShape(t.dtype, t.shape) + ")");
  }
  if (missing.empty() && unexpected.empty() && mismatched.empty()) return Status::Ok();
  std::string msg = "checkpoint " + checkpoint.path() + " does not match its config (" +
                    std::to_string(expected.size()) +
                    " tensors expected): " + std::to_string(missing.size()) + " missing, " +
                    std::to_string(unexpected.size()) + " unexpected, " +
                    std::to_string(mismatched.size()) + " mismatched";
  AppendList(&msg, "missing", std::move(missing));
  AppendList(&msg, "unexpected", std::move(unexpected));
  AppendList(&msg, "mismatched", std::move(mismatched));
  return DataLoss(std::move(msg));
}

}  // namespace deepinfer::model
