#include "model/deepseek_v41/sequence_state.h"

#include <limits>
#include <string>

#include "core/check.h"

namespace deepinfer::model {
namespace {

// Pages of a sequence without an engine: the smallest legal page length, at least 64 positions.
int64_t OwnPageTokens(const ModelConfig& config, const std::vector<LayerDescriptor>& layers) {
  const int64_t min_tokens = MinPageTokens(config, layers);
  return (64 + min_tokens - 1) / min_tokens * min_tokens;
}

}  // namespace

SequenceState NewSequenceState(const ModelConfig& config,
                               const std::vector<LayerDescriptor>& layers, KvPageStore* store) {
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
  if (store == nullptr) {
    auto layout = MakeKvPageLayout(config, layers, OwnPageTokens(config, layers));
    CHECK(layout.ok()) << layout.status().ToString();
    s.own_store = std::make_shared<KvPageStore>(*std::move(layout), 0, /*growable=*/true);
    store = s.own_store.get();
  }
  s.kv_store = store;
  return s;
}

namespace {

// Entry j of a paged region (at `offset` in each page, `width` lanes per entry) of `layer`.
uint16_t* PagedEntry(const SequenceState& s, int layer, int64_t j, int64_t offset, int64_t width) {
  const KvPageLayout::Layer& pl = s.page_layout().layers[static_cast<size_t>(layer)];
  DCHECK_GE(offset, 0);
  const int64_t page = j / pl.entries_per_page;
  DCHECK_LT(page, static_cast<int64_t>(s.pages.size()));
  return reinterpret_cast<uint16_t*>(s.kv_store->page(s.pages[static_cast<size_t>(page)]) +
                                     offset) +
         (j % pl.entries_per_page) * width;
}

}  // namespace

uint16_t* SequenceState::CompressedEntry(int layer, int64_t j) const {
  const KvPageLayout& l = kv_store->layout();
  return PagedEntry(*this, layer, j, l.layers[static_cast<size_t>(layer)].kv_offset, l.head_dim);
}

uint16_t* SequenceState::IndexKey(int layer, int64_t j) const {
  const KvPageLayout& l = kv_store->layout();
  return PagedEntry(*this, layer, j, l.layers[static_cast<size_t>(layer)].key_offset,
                    l.index_head_dim);
}

uint16_t* SequenceState::RingTail(int layer, int stage, int64_t position) const {
  const KvPageLayout& l = kv_store->layout();
  const int64_t page = position / l.page_tokens;
  const int64_t in_page = position % l.page_tokens;
  const int64_t tail_slot = in_page - (l.page_tokens - l.tail_tokens);
  if (tail_slot < 0 || page >= static_cast<int64_t>(pages.size())) return nullptr;
  const int64_t off = stage >= 0 ? l.dspark_tail_offset[static_cast<size_t>(stage)]
                                 : l.layers[static_cast<size_t>(layer)].tail_offset;
  return reinterpret_cast<uint16_t*>(kv_store->page(pages[static_cast<size_t>(page)]) + off) +
         tail_slot * l.head_dim;
}

Status EnsurePages(SequenceState* state, int64_t positions) {
  const int64_t p = state->page_layout().page_tokens;
  const int64_t need = (positions + p - 1) / p;
  if (static_cast<int64_t>(state->pages.size()) >= need) return Status::Ok();
  if (state->own_store == nullptr || state->kv_store != state->own_store.get()) {
    return InvalidArgument("sequence has pages for " + std::to_string(state->covered()) +
                           " positions but the call reaches position " +
                           std::to_string(positions - 1) +
                           "; the engine must reserve pages before the forward call");
  }
  while (static_cast<int64_t>(state->own_pages.size()) < need) {
    state->own_pages.push_back(state->kv_store->Allocate());
  }
  state->pages = state->own_pages;
  return Status::Ok();
}

void SealCompletePages(SequenceState* state, int64_t from) {
  const int64_t p = state->page_layout().page_tokens;
  for (int64_t page = from / p; (page + 1) * p <= state->length; ++page) {
    if ((page + 1) * p <= from) continue;
    KvPageHeader* h = state->kv_store->header(state->pages[static_cast<size_t>(page)]);
    h->complete = 1;
  }
}

SequenceState ForkSequenceState(const SequenceState& parent) {
  CHECK(parent.own_store == nullptr) << "forking a sequence that owns its page store";
  SequenceState s;
  s.length = parent.length;
  s.tokens = parent.tokens;
  s.layers = parent.layers;
  s.dspark = parent.dspark;
  s.dspark_length = parent.dspark_length;
  s.prompt_length = parent.prompt_length;
  s.engram_history = parent.engram_history;
  s.kv_store = parent.kv_store;
  s.pages = parent.pages;  // the engine's table of the parent until the fork's first call
  return s;
}

int64_t SequenceState::CacheBytes() const {
  int64_t bytes = 0;
  for (const LayerCache& c : layers) {
    bytes +=
        static_cast<int64_t>(c.ring.size() * 2 + (c.group_kv.size() + c.group_score.size()) * 4);
  }
  for (const auto& r : dspark) bytes += static_cast<int64_t>(r.size() * 2);
  return bytes;
}

}  // namespace deepinfer::model
