#include "model/deepseek_v41/kv_pages.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/check.h"

namespace deepinfer::model {
namespace {

constexpr int64_t kAlign = 64;

int64_t AlignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

}  // namespace

int64_t MinPageTokens(const ModelConfig& config, const std::vector<LayerDescriptor>& layers) {
  int64_t p = std::max(1, config.candidate_block_size);
  for (const LayerDescriptor& d : layers) {
    if (!d.is_mtp && d.compress_ratio > 0) p = std::lcm(p, static_cast<int64_t>(d.compress_ratio));
  }
  return p;
}

StatusOr<KvPageLayout> MakeKvPageLayout(const ModelConfig& config,
                                        const std::vector<LayerDescriptor>& layers,
                                        int64_t page_tokens) {
  const int64_t min_tokens = MinPageTokens(config, layers);
  if (page_tokens <= 0 || page_tokens % min_tokens != 0) {
    return InvalidArgument("page length " + std::to_string(page_tokens) +
                           " must be a positive multiple of " + std::to_string(min_tokens) +
                           " (every compress ratio and candidate_block_size divide it)");
  }
  KvPageLayout l;
  l.page_tokens = page_tokens;
  l.tail_tokens = std::min<int64_t>(page_tokens, config.window_size);
  l.head_dim = config.head_dim;
  l.index_head_dim = config.index_head_dim;
  int64_t off = AlignUp(sizeof(KvPageHeader));
  for (const LayerDescriptor& d : layers) {
    if (d.is_mtp) continue;
    KvPageLayout::Layer pl;
    if (d.owns_compressor) {
      pl.entries_per_page = page_tokens / d.compress_ratio;
      pl.kv_offset = off;
      off = AlignUp(off + pl.entries_per_page * l.head_dim * 2);
      if (d.has_indexer) {
        pl.key_offset = off;
        off = AlignUp(off + pl.entries_per_page * l.index_head_dim * 2);
      }
    }
    l.layers.push_back(pl);
  }
  for (KvPageLayout::Layer& pl : l.layers) {
    pl.tail_offset = off;
    off = AlignUp(off + l.tail_tokens * l.head_dim * 2);
  }
  for (const LayerDescriptor& d : layers) {
    if (!d.is_mtp) continue;
    l.dspark_tail_offset.push_back(off);
    off = AlignUp(off + l.tail_tokens * l.head_dim * 2);
  }
  l.page_bytes = off;
  return l;
}

KvPageStore::KvPageStore(KvPageLayout layout, int64_t capacity, bool growable)
    : layout_(std::move(layout)), growable_(growable) {
  CHECK_GT(layout_.page_bytes, 0);
  if (capacity > 0) {
    const size_t bytes = static_cast<size_t>(capacity * layout_.page_bytes + kAlign);
    blocks_.emplace_back(new uint8_t[bytes]);
    uint8_t* base = blocks_.back().get();
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    for (int64_t i = 0; i < capacity; ++i) pages_.push_back(base + i * layout_.page_bytes);
    for (int64_t i = capacity - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
    in_use_.assign(static_cast<size_t>(capacity), 0);
  }
}

int32_t KvPageStore::Allocate() {
  if (free_.empty()) {
    if (!growable_) return -1;
    blocks_.emplace_back(new uint8_t[static_cast<size_t>(layout_.page_bytes + kAlign)]);
    uint8_t* base = blocks_.back().get();
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    pages_.push_back(base);
    in_use_.push_back(0);
    free_.push_back(static_cast<int32_t>(pages_.size() - 1));
  }
  const int32_t id = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(id)] = 1;
  ++used_;
  *header(id) = KvPageHeader{};
  return id;
}

void KvPageStore::Release(int32_t page) {
  CHECK(page >= 0 && page < static_cast<int32_t>(pages_.size())) << "page " << page;
  CHECK(in_use_[static_cast<size_t>(page)]) << "page " << page << " released twice";
  in_use_[static_cast<size_t>(page)] = 0;
  free_.push_back(page);
  --used_;
}

}  // namespace deepinfer::model
