// SequenceState: everything one sequence carries from one forward call to the next.
//
// Per backbone layer (v41_model.md §3.13):
//   * the window ring: [window][head_dim] bf16, slot = position % window, holding the FP8-QDQ'd
//     post-RoPE latent of the last `window` positions;
//   * for a KV source: the compressed KV [entries][head_dim] (post-RoPE, FP4 QDQ) and the index
//     keys [entries][index_head_dim] (post-RoPE, FP4 QDQ), entry j standing for positions
//     j*ratio .. j*ratio+ratio-1; and for a pooling compressor (ratio > 1) the fp32 partial group
//     (kv and gate score per slot, slot = position % ratio).
// Per DSpark stage: its own window ring of main_x latents.
// Plus the token history (Engram n-grams) and, in `official` index-key mode, which KV source
// published index keys last (v41_model.md §3.14).
#pragma once

#include <cstdint>
#include <vector>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/engram_hash.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {

struct LayerCache {
  std::vector<uint16_t> ring;  // [window][head_dim]
  // KV sources only.
  std::vector<uint16_t> compressed;  // [n_entries][head_dim]
  std::vector<uint16_t> index_keys;  // [n_entries][index_head_dim]
  int64_t n_entries = 0;
  std::vector<float> group_kv;     // [ratio][head_dim] (ratio > 1)
  std::vector<float> group_score;  // [ratio][head_dim]
};

struct SequenceState {
  int64_t length = 0;                         // positions consumed so far
  std::vector<int32_t> tokens;                // every token consumed, in order
  std::vector<LayerCache> layers;             // backbone layers
  std::vector<std::vector<uint16_t>> dspark;  // per DSpark stage: [window][head_dim] ring
  int64_t dspark_length = 0;                  // positions written into the DSpark rings
  int published_index_owner = -1;             // official mode: last KV source that published
  EngramHistory engram_history;               // look-back of the Engram n-gram hash

  // Bytes held by the caches (for accounting).
  int64_t CacheBytes() const;
};

// A fresh state for a sequence of `config`.
SequenceState NewSequenceState(const ModelConfig& config,
                               const std::vector<LayerDescriptor>& layers);

}  // namespace deepinfer::model
