// Decoder-side bounded replay (DeepInfer's "compact" prefill truncation; v41 facts §CED).
//
// Layers after the last KV source own nothing but their window rings: no compressed KV, no
// index keys. In a prefill they only need to produce the window latents of the last `window`
// positions and the hidden state of the last row, so they may run on the last `keep` rows of the
// prefill only (keep = window + backtrack; DeepInfer keeps 140 = 128 + 12 for the released
// config). Rows before that skip those layers; the kept rows' window attention then sees no
// latent for the skipped positions (each layer's ring starts at the first kept row,
// LayerCache::ring_from). That is an approximation — logits deviate from a full prefill — so
// it is a switch, off by default (ForwardOptions::decoder_replay_keep = 0), and its pages' ring
// tails of those layers are incomplete (the engine refuses it together with the prefix cache).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/batch_context.h"
#include "model/deepseek_v41/layer_descriptor.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

// The last backbone layer that owns a compressor (a KV source), or -1.
int LastKvSourceLayer(const std::vector<LayerDescriptor>& layers, int n_backbone);

// Narrows `ctx` to the rows at positions >= keep_from[s] of each segment s (keep_from[s] in
// [pos0, pos0 + n_rows]; a segment may keep no row). Segments, positions and the hand-offs
// published so far (top-k per row, the candidate mask) are remapped; segments that keep no row
// are dropped. Returns, per kept row, its row in the old batch (ascending).
std::vector<int64_t> CompactRows(BatchContext* ctx, std::span<const int64_t> keep_from);

// What one forward call does under decoder-side replay.
struct ReplayPlan {
  bool active = false;             // some input skips rows
  int first_layer = -1;            // the first layer after the last KV source
  std::vector<int64_t> keep_from;  // per input: first position kept from first_layer on
};

// The plan for a call (inactive when options.decoder_replay_keep is 0, the model has no layer
// after its last KV source, or no input skips a row). Errors: logits asked of a skipped row, or
// all_logits with rows to skip.
StatusOr<ReplayPlan> PlanDecoderReplay(const std::vector<LayerDescriptor>& layers, int n_layers,
                                       std::span<const ForwardInput> inputs,
                                       const ForwardOptions& options);

// Before block `layer` (= plan.first_layer): narrows ctx, the stream x [rows][hc][dim] and the
// pre-mix [rows][hc] to the kept rows, composes row_map (kept row -> the call's row) and starts
// the window rings of layers >= `layer` at each input's first kept position. `segments`: the
// call's segments as they were before narrowing.
void NarrowForDecoderReplay(const ReplayPlan& plan, const std::vector<Segment>& segments, int layer,
                            BatchContext* ctx, std::vector<int64_t>* row_map,
                            std::vector<uint16_t>* x, std::vector<float>* pre);

}  // namespace deepinfer::model
