// Paged storage for the long-range state of sequences (docs/engine_contract.md).
//
// A page covers `page_tokens` consecutive positions [i*P, (i+1)*P) of one sequence and holds,
// for every KV-source layer, the compressed KV entries and index keys those positions produce
// (entry j of a ratio-r layer stands for positions j*r .. j*r+r-1, so a page holds P/r entries of
// it); P is a multiple of every compress ratio and of candidate_block_size, so a page's entries
// depend only on the tokens up to its end (and, in official index-key mode, on which of those
// positions were prompt rows: index_key_schedule.h; the engine's block keys include it). That is
// what lets the engine share full pages between sequences with the same prefix (the prefix cache)
// and evict them as units.
//
// A page also keeps a *ring tail*: the window latents (the values the window rings hold) of its
// last min(P, window) positions for every backbone layer and DSpark stage. A sequence that adopts
// cached pages up to H restores its window rings from the tails of the pages before H, exactly,
// without recomputing anything (AdoptPrefix in model.h). The ratio-2 partial group is empty at H,
// since H is a multiple of every ratio.
//
// Page layout (bytes, each region 64-byte aligned):
//   header | per KV source: kv [P/r][head_dim] bf16, keys [P/r][index_head_dim] bf16 (indexer
//   owners only) | per backbone layer: tail [T][head_dim] bf16 | per DSpark stage: tail likewise,
// with T = min(P, window).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {

struct KvPageLayout {
  int64_t page_tokens = 0;
  int64_t tail_tokens = 0;  // min(page_tokens, window)
  int64_t page_bytes = 0;
  int64_t head_dim = 0;
  int64_t index_head_dim = 0;
  struct Layer {
    int64_t entries_per_page = 0;  // KV sources: page_tokens / ratio; else 0
    int64_t kv_offset = -1;        // KV sources
    int64_t key_offset = -1;       // KV sources that own an indexer
    int64_t tail_offset = -1;      // every backbone layer
  };
  std::vector<Layer> layers;                // per backbone layer
  std::vector<int64_t> dspark_tail_offset;  // per DSpark stage
};

// The smallest page length every layer accepts: lcm of the compress ratios and
// candidate_block_size.
int64_t MinPageTokens(const ModelConfig& config, const std::vector<LayerDescriptor>& layers);

// Layout for pages of `page_tokens` positions (a multiple of MinPageTokens).
StatusOr<KvPageLayout> MakeKvPageLayout(const ModelConfig& config,
                                        const std::vector<LayerDescriptor>& layers,
                                        int64_t page_tokens);

// Page header: written when the page's last position is consumed.
struct KvPageHeader {
  int32_t complete = 0;  // 1 once every position of the page has been consumed
};

// Storage for pages: either a fixed pool of `capacity` pages (one allocation, sized by the
// engine from a memory budget) or, when growable, pages allocated on demand (sequences that no
// engine manages: tools, tests). Page ids are dense ints; Allocate/Release keep a free list.
// Not thread-safe: the owner (the engine's KV manager, or one sequence) serializes calls.
class KvPageStore {
 public:
  KvPageStore(KvPageLayout layout, int64_t capacity, bool growable);
  KvPageStore(const KvPageStore&) = delete;
  KvPageStore& operator=(const KvPageStore&) = delete;

  const KvPageLayout& layout() const { return layout_; }
  // A free page id, or -1 when a fixed pool is full.
  int32_t Allocate();
  void Release(int32_t page);
  int64_t capacity() const { return static_cast<int64_t>(pages_.size()); }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()) + (growable_ ? 1 : 0); }
  int64_t used_pages() const { return used_; }
  bool growable() const { return growable_; }

  uint8_t* page(int32_t id) const { return pages_[static_cast<size_t>(id)]; }
  KvPageHeader* header(int32_t id) const { return reinterpret_cast<KvPageHeader*>(page(id)); }

 private:
  KvPageLayout layout_;
  bool growable_;
  std::vector<std::unique_ptr<uint8_t[]>> blocks_;  // owned memory
  std::vector<uint8_t*> pages_;                     // page id -> start
  std::vector<int32_t> free_;                       // LIFO
  std::vector<uint8_t> in_use_;
  int64_t used_ = 0;
};

}  // namespace deepinfer::model
