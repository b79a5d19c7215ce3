// LayerDescriptor: what one block of DeepSeek-V4.1 is, derived once from the ModelConfig.
//
// The official inference/model.py never states these roles; they fall out of running the
// blocks in order with one shared slot per kind of state (see config_validate.cc for the rules).
// Everything downstream (weight loading, cache allocation, the forward pass, `inspect`) reads the
// descriptor instead of re-deriving a role from compress_ratios.
//
// Index space: backbone layers 0..n_layers-1 (`layers.N`), then the DSpark stages
// n_layers..n_layers+S-1 (`mtp.S`), matching the compress_ratios list.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer::model {

// The two-level top-k: the source publishes a block mask from its own index scores; consumers
// (later index sources) mask their scores with it before their own top-k.
enum class CandidateRole { kNone, kSource, kConsumer };

struct LayerDescriptor {
  int index = 0;     // position in compress_ratios
  std::string name;  // tensor-name prefix: "layers.N" or "mtp.S"
  bool is_mtp = false;
  int mtp_stage = -1;  // S for mtp.S, else -1

  int compress_ratio = 0;  // 0 = window only; r > 0 adds compressed KV pooled r-to-1
  int window_size = 0;     // ring length of this layer's window KV (every layer has one)

  // RoPE: ratio-0 layers and DSpark stages use rope_theta without YaRN; ratio > 0 layers use
  // compress_rope_theta with YaRN (when the config's original_seq_len > 0), for the queries,
  // the window KV and the compressed entries alike.
  double rope_theta = 0;
  bool yarn = false;

  // Compressed KV. kv_source_layer is the layer whose compressor produces the compressed KV
  // and index keys this layer reads (== index for the source itself); -1 when ratio is 0.
  int kv_source_layer = -1;
  bool owns_compressor = false;   // a KV source: compressor + indexer.wk/k_norm + the caches
  bool compressor_pools = false;  // ratio > 1: softmax-gated pooling, wgate, partial group state
  // Compressor weights/compute as the official module tree holds them: F32 for a pooling
  // compressor (values are bf16-exact on disk), BF16 at ratio 1. Meaningful iff owns_compressor.
  DType compressor_dtype = DType::kBF16;

  // Indexer. has_indexer: an index source (own indexer.wq_b + weights_proj), which scores the
  // index keys of index_key_layer (its KV source; the official decode path may score the most
  // recently published keys instead, see v41_model.md §3.14) and publishes its top-k.
  // index_source_layer: whose top-k this layer attends with (== index when has_indexer).
  bool has_indexer = false;
  int index_key_layer = -1;
  int index_source_layer = -1;
  CandidateRole candidate_role = CandidateRole::kNone;
  int candidate_source_layer = -1;  // for kConsumer: the layer whose mask it applies

  // Engram: applied to the stream before this block. engram_index = the layer's position in
  // engram_layer_ids, which selects its table, its hash primes and multipliers.
  int engram_index = -1;

  // DSpark tap: this block's input (mean over the hc copies) feeds mtp.0's main_proj.
  // dspark_tap_slot = position of its slice in the concatenated main hidden; the official code
  // appends taps in layer order, so this is the layer's rank among the target layers.
  int dspark_tap_slot = -1;
  bool has_main_proj = false;   // mtp.0: main_proj + main_norm
  bool has_draft_head = false;  // last stage: norm + markov_head + confidence_head

  // MoE of this block (DSpark stages have their own counts).
  int n_routed_experts = 0;
  int n_activated_experts = 0;
  int n_shared_experts = 0;

  bool has_compressed_kv() const { return compress_ratio > 0; }
  bool has_engram() const { return engram_index >= 0; }
  bool is_dspark_tap() const { return dspark_tap_slot >= 0; }

  bool operator==(const LayerDescriptor&) const = default;
};

// One descriptor per backbone layer, then one per DSpark stage (none when the config builds no
// stages, i.e. n_mtp_layers == 0 or dspark_block_size == 0). `config` must have passed
// ValidateModelConfig (every parser ensures that); violations are CHECK failures.
std::vector<LayerDescriptor> BuildLayerDescriptors(const ModelConfig& config);

// A markdown table, one row per layer, in the vocabulary of the fixture README's layer-roles
// table: | layer | name | ratio | RoPE | compressed KV + index keys | top-k indices | candidates |
// Engram | DSpark tap | experts |. For `deepinfer inspect`.
std::string DescribeLayers(const std::vector<LayerDescriptor>& layers);

// One line per layer with every field, for debugging and diffs (key=value pairs).
std::string DumpLayerDescriptor(const LayerDescriptor& layer);

}  // namespace deepinfer::model
