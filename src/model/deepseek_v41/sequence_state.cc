#include "model/deepseek_v41/sequence_state.h"

#include <limits>

namespace deepinfer::model {

SequenceState NewSequenceState(const ModelConfig& config,
                               const std::vector<LayerDescriptor>& layers) {
  SequenceState s;
  const size_t ring = static_cast<size_t>(config.window_size) * config.head_dim;
  for (const LayerDescriptor& d : layers) {
    if (d.is_mtp) {
      s.dspark.emplace_back(ring, 0);
      continue;
    }
    LayerCache c;
    c.ring.assign(ring, 0);
    if (d.owns_compressor && d.compressor_pools) {
      const size_t group = static_cast<size_t>(d.compress_ratio) * config.head_dim;
      c.group_kv.assign(group, 0.0f);
      c.group_score.assign(group, -std::numeric_limits<float>::infinity());
    }
    s.layers.push_back(std::move(c));
  }
  return s;
}

int64_t SequenceState::CacheBytes() const {
  int64_t bytes = 0;
  for (const LayerCache& c : layers) {
    bytes += static_cast<int64_t>((c.ring.size() + c.compressed.size() + c.index_keys.size()) * 2 +
                                  (c.group_kv.size() + c.group_score.size()) * 4);
  }
  for (const auto& r : dspark) bytes += static_cast<int64_t>(r.size() * 2);
  return bytes;
}

}  // namespace deepinfer::model
