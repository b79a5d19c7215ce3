// WeightManifest: every tensor a DeepSeek-V4.1 checkpoint must hold for a given ModelConfig, with
// its release name, on-disk dtype, shape and block layout; validation of a checkpoint against it;
// byte totals per role.
//
// Names are the official module tree's parameter names (`embed.weight`, `layers.N.…`, `mtp.S.…`,
// `norm.weight`, `head.weight`); see the v41-tiny-a fixture README ("Checkpoint layout") and
// v41_model.md §3.12. Per block (LayerDescriptor decides which parts exist):
//   hc_{attn,ffn}_{fn,base,scale}, attn.{attn_sink, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b},
//   attn.compressor.{norm, wkv, wgate (ratio > 1)} + attn.indexer.{wk, k_norm} on KV sources,
//   attn.indexer.{wq_b, weights_proj} on index sources, ffn.gate.{weight, bias},
//   ffn.experts.E.{w1, w2, w3}, ffn.shared_experts.{w1, w2, w3}, engram.{q_weight, k_weight,
//   embed, wkv} on Engram layers, attn_norm, ffn_norm; mtp.0 adds main_proj + main_norm, the last
//   stage norm + markov_head.{embed, head} + confidence_head.proj.
//
// Vision: a config with the vision tower enabled (vision_n_layers > 0, as the release's) still
// yields the text manifest only: the engine does not run the vision tower. ValidateCheckpoint then
// IGNORES tensors named vision.*, aligner.*, image_start/end/newline* and *.ffn.gate.bias_vl
// (counted as role kVision); with vision disabled those names are unexpected tensors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer::io {
class Checkpoint;
}

namespace deepinfer::model {

// How one logical weight is stored. (Named WeightLayout because config.h's WeightFormat already
// names the config-level dtype choice kBf16/kFp8/kFp4.)
enum class WeightLayout {
  kBf16,       // BF16 [shape]
  kF32,        // F32 [shape]
  kFp8Tile32,  // F8_E4M3 [out, in] + `.scale` F8_E8M0 [ceil(out/32), in/32]: one scale per
               // 32x32 tile (dense projections)
  kMxfp4,      // I8 [out, in/2] (e2m1 nibble pairs, low nibble = even element) + `.scale`
               // F8_E8M0 [out, in/32]: one scale per 32 inputs (routed experts)
  kFp8Row32,   // F8_E4M3 [rows, d] + `.scale` F8_E8M0 [rows, d/32]: one scale per 32 columns
               // of a row (Engram table)
};
std::string_view WeightLayoutName(WeightLayout layout);  // "bf16", "fp8-tile32", ...

// What a weight is for, for byte totals (`deepinfer inspect`). kAttention: `layers.N.attn.*`
// (projections, norms, sink, compressor, indexer); kExperts: routed experts of the backbone;
// kEngram: `layers.N.engram.*`; kDspark: everything under `mtp.*`; kOther: embedding, head,
// final norm, hyper-connection mixes, block norms, MoE gates, shared experts; kVision: ignored
// vision tensors (never in the manifest).
enum class WeightRole { kAttention, kExperts, kEngram, kDspark, kOther, kVision };
inline constexpr int kNumWeightRoles = 6;
std::string_view WeightRoleName(WeightRole role);  // "attention", "experts", ...

// What kind of parameter a weight is: picks the statistics make-checkpoint draws it from.
enum class WeightKind {
  kProjection,   // Gaussian, std = gain * fan_in^-1/2 (fan_in = shape.back())
  kEmbedding,    // Gaussian, std = gain (embed.weight, markov_head.embed)
  kNorm,         // RMSNorm weight: gain * (1 + 0.1 N(0,1))
  kGaussian,     // Gaussian, std = gain, mean = offset (hc base/scale, sink, gate bias)
  kExpert,       // MXFP4 routed-expert matrix
  kEngramTable,  // N(0, gain) per-32-column quantized table
};

// One logical weight.
struct WeightSpec {
  // Full name of the value tensor, e.g. "layers.0.attn.wq_a.weight" or "layers.0.hc_attn_fn".
  // Quantized layouts (kFp8Tile32, kMxfp4, kFp8Row32) always end in ".weight"; their scale
  // tensor is the same name with ".weight" replaced by ".scale" (ScaleName).
  std::string name;
  WeightLayout layout = WeightLayout::kBf16;
  std::vector<int64_t> shape;  // logical: [out, in] for matrices (MXFP4 `in` counts elements)
  WeightRole role = WeightRole::kOther;
  int layer = -1;  // LayerDescriptor index; -1 for embed/head/norm
  WeightKind kind = WeightKind::kProjection;
  float gain = 1.0f;    // see WeightKind
  float offset = 0.0f;  // kGaussian mean
  int expert = -1;      // routed-expert index for kExpert

  bool quantized() const;
  std::string ScaleName() const;  // CHECKs quantized()
};

// One tensor as stored.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  WeightRole role = WeightRole::kOther;
  int weight = -1;  // index into the ExpectedWeights list it came from
  bool is_scale = false;

  uint64_t ByteSize() const;
};

// The logical weights for `config` (which must be valid), in the official module order (the
// order of the fixture's file): embed, layers.0 .. layers.N-1, norm, head, mtp.0 .. mtp.S-1.
std::vector<WeightSpec> ExpectedWeights(const ModelConfig& config);
// The on-disk tensors of `weights`, in order: each value tensor followed by its scale.
std::vector<TensorSpec> ExpectedTensors(const std::vector<WeightSpec>& weights);
inline std::vector<TensorSpec> ExpectedTensors(const ModelConfig& config) {
  return ExpectedTensors(ExpectedWeights(config));
}

// True for the tensor names of the vision tower (ignored when the config enables vision).
bool IsVisionTensorName(std::string_view name);
// The role a tensor name belongs to, from its name alone (used for unexpected tensors too).
WeightRole RoleOfTensorName(std::string_view name);

// Bytes per role (indexed by WeightRole) and in total.
struct RoleBytes {
  std::array<uint64_t, kNumWeightRoles> bytes{};
  std::array<uint64_t, kNumWeightRoles> tensors{};
  uint64_t total() const;
  uint64_t Of(WeightRole r) const { return bytes[static_cast<int>(r)]; }
};
RoleBytes ManifestBytes(const std::vector<TensorSpec>& tensors);
// Every tensor actually in the checkpoint, classified by name.
RoleBytes CheckpointBytes(const io::Checkpoint& checkpoint);
// "attention  4.72 GiB (… tensors)" lines, one per role with bytes, then the total.
std::string DescribeRoleBytes(const RoleBytes& bytes);

// Checks that `checkpoint` holds exactly the tensors of ExpectedTensors(config): every dtype and
// shape (scale shapes included, i.e. the block layout of each role). All problems go into ONE
// error (kDataLoss): counts of missing / unexpected / mismatched tensors, then each list sorted by
// name and cut after kMaxListed entries ("… and N more").
inline constexpr size_t kMaxListed = 20;
Status ValidateCheckpoint(const io::Checkpoint& checkpoint, const ModelConfig& config);

}  // namespace deepinfer::model
