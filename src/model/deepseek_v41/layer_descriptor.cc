#include "model/deepseek_v41/layer_descriptor.h"

#include <algorithm>
#include <sstream>

namespace deepinfer::model {
namespace {

int PositionIn(const std::vector<int>& ids, int layer) {
  auto it = std::find(ids.begin(), ids.end(), layer);
  return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
}

// The last entry of `ids` that is <= layer, or -1: the layer whose published state is still in
// the shared slot when `layer` runs.
int LastAtOrBefore(const std::vector<int>& ids, int layer) {
  int best = -1;
  for (int id : ids) {
    if (id <= layer && id > best) best = id;
  }
  return best;
}

const char* CandidateRoleName(CandidateRole role) {
  switch (role) {
    case CandidateRole::kNone:
      return "none";
    case CandidateRole::kSource:
      return "source";
    case CandidateRole::kConsumer:
      return "consumer";
  }
  return "?";
}

}  // namespace

std::vector<LayerDescriptor> BuildLayerDescriptors(const ModelConfig& c) {
  CHECK(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).ToString();
  const int n_stages = c.dspark_enabled() ? c.n_mtp_layers : 0;
  std::vector<int> taps = c.dspark_target_layer_ids;
  std::sort(taps.begin(), taps.end());  // main hiddens are appended in layer order

  std::vector<LayerDescriptor> layers;
  layers.reserve(c.n_layers + n_stages);
  for (int i = 0; i < c.n_layers + n_stages; ++i) {
    LayerDescriptor d;
    d.index = i;
    d.is_mtp = i >= c.n_layers;
    d.mtp_stage = d.is_mtp ? i - c.n_layers : -1;
    d.name = d.is_mtp ? "mtp." + std::to_string(d.mtp_stage) : "layers." + std::to_string(i);
    d.compress_ratio = c.compress_ratios[i];
    d.window_size = c.window_size;
    d.rope_theta = d.compress_ratio > 0 ? c.compress_rope_theta : c.rope_theta;
    d.yarn = d.compress_ratio > 0 && c.yarn.enabled();

    if (d.compress_ratio > 0) {  // backbone only: validation keeps DSpark stages at ratio 0
      d.kv_source_layer = LastAtOrBefore(c.kv_source_layers, i);
      d.owns_compressor = d.kv_source_layer == i;
      d.compressor_pools = d.owns_compressor && d.compress_ratio > 1;
      if (d.owns_compressor) d.compressor_dtype = d.compress_ratio > 1 ? DType::kF32 : DType::kBF16;
      d.has_indexer = PositionIn(c.index_source_layers, i) >= 0;
      d.index_source_layer = LastAtOrBefore(c.index_source_layers, i);
      d.index_key_layer = d.has_indexer ? d.kv_source_layer : -1;
      if (d.has_indexer && c.candidate_source_layer >= 0) {
        if (i == c.candidate_source_layer) {
          d.candidate_role = CandidateRole::kSource;
        } else if (i > c.candidate_source_layer) {
          d.candidate_role = CandidateRole::kConsumer;
          d.candidate_source_layer = c.candidate_source_layer;
        }
      }
      CHECK(d.kv_source_layer >= 0 && d.index_source_layer >= d.kv_source_layer)
          << "layer " << i << ": config passed validation without a KV/index source";
    }

    if (!d.is_mtp) {
      d.engram_index = PositionIn(c.engram_layer_ids, i);
      if (n_stages > 0) d.dspark_tap_slot = PositionIn(taps, i);
    } else {
      d.has_main_proj = d.mtp_stage == 0;
      d.has_draft_head = d.mtp_stage == n_stages - 1;
    }
    d.n_routed_experts = c.RoutedExperts(i);
    d.n_activated_experts = c.ActivatedExperts(i);
    d.n_shared_experts = c.n_shared_experts;
    layers.push_back(std::move(d));
  }
  return layers;
}

std::string DescribeLayers(const std::vector<LayerDescriptor>& layers) {
  std::ostringstream out;
  out << "| layer | name | ratio | RoPE | compressed KV + index keys | top-k indices | candidates "
         "| Engram | DSpark tap | experts |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|\n";
  const std::string dash = "\xE2\x80\x94";  // em dash
  for (const LayerDescriptor& d : layers) {
    std::string rope = "\xCE\xB8=" + ConfigNumber(d.rope_theta) + (d.yarn ? " + YaRN" : "");
    std::string kv = dash;
    std::string topk = dash;
    std::string candidates = dash;
    if (d.has_compressed_kv()) {
      kv =
          d.owns_compressor ? "own compressor" : "reads layer " + std::to_string(d.kv_source_layer);
      if (!d.has_indexer) {
        topk = "reuses layer " + std::to_string(d.index_source_layer) + "'s";
      } else if (d.index_key_layer == d.index) {
        topk = "own indexer, own keys";
      } else {
        topk = "own indexer on layer " + std::to_string(d.index_key_layer) + "'s keys";
      }
      if (d.candidate_role == CandidateRole::kSource) candidates = "source";
      if (d.candidate_role == CandidateRole::kConsumer) {
        candidates = "masks with layer " + std::to_string(d.candidate_source_layer) + "'s";
      }
    }
    out << "| " << d.index << " | `" << d.name << "` | " << d.compress_ratio << " | " << rope
        << " | " << kv << " | " << topk << " | " << candidates << " | "
        << (d.has_engram() ? "yes" : dash) << " | " << (d.is_dspark_tap() ? "yes" : dash) << " | "
        << d.n_routed_experts << " routed / top-" << d.n_activated_experts << " + "
        << d.n_shared_experts << " shared |\n";
  }
  return out.str();
}

std::string DumpLayerDescriptor(const LayerDescriptor& d) {
  std::ostringstream out;
  out << "index=" << d.index << " name=" << d.name << " is_mtp=" << d.is_mtp
      << " mtp_stage=" << d.mtp_stage << " ratio=" << d.compress_ratio
      << " window=" << d.window_size << " rope_theta=" << ConfigNumber(d.rope_theta)
      << " yarn=" << d.yarn << " kv_source=" << d.kv_source_layer
      << " owns_compressor=" << d.owns_compressor << " compressor_pools=" << d.compressor_pools
      << " compressor_dtype="
      << (d.owns_compressor ? DTypeName(d.compressor_dtype) : std::string_view("-"))
      << " has_indexer=" << d.has_indexer << " index_keys=" << d.index_key_layer
      << " index_source=" << d.index_source_layer
      << " candidates=" << CandidateRoleName(d.candidate_role)
      << " candidate_source=" << d.candidate_source_layer << " engram=" << d.engram_index
      << " tap_slot=" << d.dspark_tap_slot << " main_proj=" << d.has_main_proj
      << " draft_head=" << d.has_draft_head << " experts=" << d.n_routed_experts << "/"
      << d.n_activated_experts << "+" << d.n_shared_experts;
  return out.str();
}

}  // namespace deepinfer::model
