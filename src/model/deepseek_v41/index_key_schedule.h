// IndexKeySchedule: which index keys an index layer scores for one row, as a pure function of
// the row (v41_model.md §3.14).
//
// The official code keeps one shared slot of index keys: a KV source that owns an indexer
// ("owner") republishes its keys into it only when its compressor emits an entry in the current
// forward, and an index layer scores whatever the slot holds. The reference runs a prompt as one
// prefill and every generated token as one decode step, so the slot a row sees is a function of
// its position q and the prompt length L alone:
//   * prompt row (q < L): owner o publishes iff L >= ratio(o); the row scores the last owner
//     <= li that published, else the slot before the prefill (none: its own keys);
//   * generated row (q >= L): owner o publishes iff (q + 1) % ratio(o) == 0; the row scores the
//     last owner <= li that published at q, else what the slot held after row q - 1 (the last
//     owner of the whole stack that published at q - 1, else after q - 2, ..., else after the
//     prefill).
// Computing it per row, not per forward call, is what makes chunked prefill, prefix hits,
// multi-row verify calls and recompute after a preemption equal the reference's one prefill plus
// one decode step per token.
//
// Availability. A row reads entries [0, visible) of the chosen keys, visible = (q + 1) / ratio(li).
// The reference slot holds (q + 1) / ratio(o) entries of an owner o <= li that published at q
// and q / ratio(o) of an owner published earlier. Where that is fewer than `visible` (only for
// ratio orders the release never has, e.g. a ratio-1 layer after a ratio-2 owner) the reference
// reads unwritten or future-token entries; this schedule scores the row's own keys instead.
//
// Causality. An owner o > li chosen for row q was published by an earlier row, so in one batched
// call its entries past the call's first position are not written yet when layer li runs.
// MaxRowsPerCall gives how many rows from a call's start can run together; Model::Forward runs
// the rest in further passes.
#pragma once

#include <cstdint>
#include <vector>

#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {

class IndexKeySchedule {
 public:
  IndexKeySchedule() = default;
  explicit IndexKeySchedule(const std::vector<LayerDescriptor>& layers);

  // The layer whose index keys index layer `li` scores for row `pos` of a sequence whose first
  // `prompt_len` positions are its prompt (official mode; owner mode is always
  // layers[li].index_key_layer).
  int KeyLayer(int li, int64_t pos, int64_t prompt_len) const;

  // Rows of one call, starting at position `pos0` with `n_rows` rows, that can run together:
  // the largest m <= n_rows such that no row in [pos0, pos0 + m) reads entries of a later layer
  // that rows of the same call write. Always >= 1 for n_rows >= 1.
  int64_t MaxRowsPerCall(int64_t pos0, int64_t n_rows, int64_t prompt_len) const;

 private:
  struct Owner {
    int layer = 0;
    int ratio = 1;
  };
  // The owner that published last among owners_[0 .. end) at row `pos`, or -1.
  int LastPublisher(size_t end, int64_t pos, int64_t prompt_len) const;
  // The slot after the forward that computed row `pos` (-1: nothing published yet).
  int SlotAfter(int64_t pos, int64_t prompt_len) const;

  std::vector<int> ratio_;          // per backbone layer: compress ratio
  std::vector<int> own_key_layer_;  // per backbone layer: LayerDescriptor::index_key_layer
  std::vector<Owner> owners_;       // indexer-owning KV sources, in layer order
  std::vector<int> index_layers_;   // layers with an indexer, in order
};

}  // namespace deepinfer::model
