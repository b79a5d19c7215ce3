// BatchContext: what every block of one forward call reads: the rows of the batch grouped into
// per-sequence segments, their positions, the model, and the per-forward hand-offs between layers
// (top-k indices published by index sources, the candidate mask of the candidate source).
//
// Rows of a segment are consecutive positions pos0 .. pos0+n_rows-1 of one sequence, starting at
// that sequence's current length. A segment may be a prefill chunk of any size, one decode row,
// or k verify rows: the blocks treat all of them alike, which is what makes chunked prefill,
// verify and decode agree with one-shot prefill.
#pragma once

#include <cstdint>
#include <vector>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/expert_exchange.h"
#include "model/deepseek_v41/index_key_schedule.h"
#include "model/deepseek_v41/layer_descriptor.h"
#include "model/deepseek_v41/sequence_state.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

// Which index keys an index layer scores (v41_model.md §3.14).
//   kOfficial: the upstream behaviour: a KV source publishes its keys only when its compressor
//              emits an entry; an index layer scores whatever was published last, as the
//              reference's one prefill plus one decode step per token would have it, per row
//              (index_key_schedule.h).
//   kOwner:    every index layer scores its own KV source's keys.
enum class IndexKeyMode { kOfficial, kOwner };

struct Segment {
  SequenceState* state = nullptr;
  int64_t row0 = 0;    // first row in the batch
  int64_t n_rows = 0;  // rows (positions) of this segment
  int64_t pos0 = 0;    // position of the first row (== state->length before the call)
};

struct BatchContext {
  const ModelConfig* config = nullptr;
  const std::vector<LayerDescriptor>* layers = nullptr;
  const ModelWeights* weights = nullptr;
  ThreadPool* pool = nullptr;
  IndexKeyMode index_key_mode = IndexKeyMode::kOfficial;
  const IndexKeySchedule* index_keys = nullptr;  // official mode's key choice per row
  ExpertExchange* experts = nullptr;             // null: every routed expert runs here

  // RoPE frequencies per layer (rope_head_dim/2 fp32 each; kernels/cpu/rope.h).
  const std::vector<std::vector<float>>* rope_freqs = nullptr;

  std::vector<Segment> segments;
  std::vector<int64_t> positions;  // [rows]
  int64_t n_rows = 0;

  // Hand-offs within this forward, indexed [layer][row]: the compressed entries (ascending) a
  // row attends to, as published by index-source layers; and the candidate-source mask over
  // compressed entries (1 = keep).
  std::vector<std::vector<std::vector<int32_t>>> topk;
  std::vector<std::vector<uint8_t>> candidate_mask;

  const ModelConfig& cfg() const { return *config; }
  const LayerDescriptor& layer(int i) const { return (*layers)[i]; }
  const std::vector<float>& freqs(int layer) const { return (*rope_freqs)[layer]; }
};

}  // namespace deepinfer::model
