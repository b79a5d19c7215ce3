// SequenceState: everything one sequence carries from one forward call to the next.
//
// Per backbone layer (v41_model.md §3.13):
//   * the window ring: [window][head_dim] bf16, slot = position % window, holding the FP8-QDQ'd
//     post-RoPE latent of the last `window` positions;
//   * for a KV source: the compressed KV [entries][head_dim] (post-RoPE, FP4 QDQ) and the index
//     keys [entries][index_head_dim] (post-RoPE, FP4 QDQ), entry j standing for positions
//     j*ratio .. j*ratio+ratio-1, stored in pages (kv_pages.h; the page table maps position
//     blocks to pages of a KvPageStore); and for a pooling compressor (ratio > 1) the fp32
//     partial group (kv and gate score per slot, slot = position % ratio).
// Per DSpark stage: its own window ring of main_x latents.
// Plus the token history (Engram n-grams) and the prompt length, which decides the index keys a
// row scores in `official` index-key mode (index_key_schedule.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/engram_hash.h"
#include "model/deepseek_v41/kv_pages.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {

struct GroupUndoLog;  // rollback.h

struct LayerCache {
  std::vector<uint16_t> ring;  // [window][head_dim]
  // First position whose window latent this layer computed: 0, or after a prefill under
  // decoder-side bounded replay the first row it kept (earlier slots are never attended).
  int64_t ring_from = 0;
  // KV sources only: entries written so far (in pages).
  int64_t n_entries = 0;
  std::vector<float> group_kv;     // [ratio][head_dim] (ratio > 1)
  std::vector<float> group_score;  // [ratio][head_dim]
};

struct SequenceState {
  SequenceState() = default;
  SequenceState(SequenceState&&) = default;
  SequenceState& operator=(SequenceState&&) = default;
  SequenceState(const SequenceState&) = delete;  // pages have one owner
  SequenceState& operator=(const SequenceState&) = delete;

  int64_t length = 0;                         // positions consumed so far
  std::vector<int32_t> tokens;                // every token consumed, in order
  std::vector<LayerCache> layers;             // backbone layers
  std::vector<std::vector<uint16_t>> dspark;  // per DSpark stage: [window][head_dim] ring
  int64_t dspark_length = 0;                  // positions written into the DSpark rings
  // Positions [0, prompt_length) are the prompt: rows with prefill semantics, later rows each
  // with one decode step's (index_key_schedule.h). Set by the caller before the first Forward,
  // or, when still 0, by the first Forward to the number of tokens it consumes.
  int64_t prompt_length = 0;
  EngramHistory engram_history;  // look-back of the Engram n-gram hash
  // Open speculation (rollback.h): the pooling compressors journal their partial-group writes.
  GroupUndoLog* group_undo = nullptr;

  // Paged long-range state: page i covers positions [i*P, (i+1)*P). kv_store is the engine's
  // pool, or own_store for a sequence no engine manages (pages allocated on demand).
  // `pages` is a view of the page table: the engine's own (ModelRunner sets it for each call
  // from RunnerInput::pages; it is only read during a call), or own_pages for a sequence no
  // engine manages. A copy of the table is never made per call.
  KvPageStore* kv_store = nullptr;
  std::shared_ptr<KvPageStore> own_store;
  std::span<const int32_t> pages;
  std::vector<int32_t> own_pages;

  const KvPageLayout& page_layout() const { return kv_store->layout(); }
  // Positions the page table covers.
  int64_t covered() const {
    return static_cast<int64_t>(pages.size()) * kv_store->layout().page_tokens;
  }
  // Entry j of KV source `layer`: compressed KV [head_dim] and index key [index_head_dim].
  uint16_t* CompressedEntry(int layer, int64_t j) const;
  uint16_t* IndexKey(int layer, int64_t j) const;
  // The ring-tail slot of `position` for backbone layer `layer` (stage = -1) or DSpark stage
  // `stage`, or null when that position is not in its page's tail or has no page.
  uint16_t* RingTail(int layer, int stage, int64_t position) const;

  // Bytes held by the per-sequence caches (rings, partial groups), pages excluded.
  int64_t CacheBytes() const;
};

// Marks the pages that the positions [from, state->length) completed: header.complete = 1.
void SealCompletePages(SequenceState* state, int64_t from);

// Grows the page table of an own-store sequence to cover `positions`; for a sequence in an
// engine pool, checks that it does (the engine reserves pages before a forward call).
Status EnsurePages(SequenceState* state, int64_t positions);

// A copy of `parent` for a parallel sample: every per-sequence cache copied, the same page store
// and page table (the engine gives the fork its own table before the next forward call: shared
// full pages, a copy of the partly written last one). `parent` must live in a store it does not
// own (an engine pool).
SequenceState ForkSequenceState(const SequenceState& parent);

// A fresh state for a sequence of `config` whose pages live in `store` (the engine's pool), or,
// when `store` is null, in a growable store of its own.
SequenceState NewSequenceState(const ModelConfig& config,
                               const std::vector<LayerDescriptor>& layers,
                               KvPageStore* store = nullptr);

}  // namespace deepinfer::model
