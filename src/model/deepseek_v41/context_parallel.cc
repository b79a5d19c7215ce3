#include "model/deepseek_v41/context_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/phase_timer.h"

namespace deepinfer::model {
namespace {

// A byte range of a page.
struct Region {
  int64_t offset = 0;
  int64_t bytes = 0;
};

// The page regions block `li` writes for prompt rows: its compressed KV and index keys (a KV
// source) and its ring tail. Nothing else of a page is written by a backbone block.
std::vector<Region> LayerRegions(const KvPageLayout& l, const LayerDescriptor& d) {
  const KvPageLayout::Layer& ll = l.layers[static_cast<size_t>(d.index)];
  std::vector<Region> r;
  if (d.owns_compressor) {
    r.push_back({ll.kv_offset, ll.entries_per_page * l.head_dim * 2});
    if (ll.key_offset >= 0)
      r.push_back({ll.key_offset, ll.entries_per_page * l.index_head_dim * 2});
  }
  r.push_back({ll.tail_offset, l.tail_tokens * l.head_dim * 2});
  return r;
}

// Layer `li`'s regions of the pages of `chunk` (whole pages: an earlier chunk ends on a page
// boundary).
std::string PackLayer(const SequenceState& s, const std::vector<Region>& regions,
                      const ContextChunk& chunk) {
  const int64_t p = s.page_layout().page_tokens;
  std::string bytes;
  for (int64_t page = chunk.begin / p; page < chunk.end / p; ++page) {
    const uint8_t* base = s.kv_store->page(s.pages[static_cast<size_t>(page)]);
    for (const Region& r : regions)
      bytes.append(reinterpret_cast<const char*>(base + r.offset), r.bytes);
  }
  return bytes;
}

Status UnpackLayer(const std::string& bytes, const std::vector<Region>& regions,
                   const ContextChunk& chunk, int from, int li, SequenceState* s) {
  const int64_t p = s->page_layout().page_tokens;
  int64_t per_page = 0;
  for (const Region& r : regions) per_page += r.bytes;
  const int64_t want = (chunk.end / p - chunk.begin / p) * per_page;
  if (static_cast<int64_t>(bytes.size()) != want) {
    return DataLoss("context parallel: rank " + std::to_string(from) + " sent " +
                    std::to_string(bytes.size()) + " bytes for layer " + std::to_string(li) +
                    ", expected " + std::to_string(want));
  }
  const char* at = bytes.data();
  for (int64_t page = chunk.begin / p; page < chunk.end / p; ++page) {
    uint8_t* base = s->kv_store->page(s->pages[static_cast<size_t>(page)]);
    for (const Region& r : regions) {
      std::memcpy(base + r.offset, at, static_cast<size_t>(r.bytes));
      at += r.bytes;
    }
  }
  return Status::Ok();
}

// After a failed receive the forward still runs to its end (a hook cannot stop it): the layer's
// regions of `chunk` are zeroed so that it computes on defined values, and the error is returned.
void ZeroLayer(const std::vector<Region>& regions, const ContextChunk& chunk, SequenceState* s) {
  const int64_t p = s->page_layout().page_tokens;
  for (int64_t page = chunk.begin / p; page < chunk.end / p; ++page) {
    uint8_t* base = s->kv_store->page(s->pages[static_cast<size_t>(page)]);
    for (const Region& r : regions) std::memset(base + r.offset, 0, static_cast<size_t>(r.bytes));
  }
}

Status CheckChunks(std::span<const ContextChunk> chunks, int64_t n, int64_t page_tokens,
                   int ranks) {
  if (static_cast<int>(chunks.size()) != ranks) {
    return InvalidArgument("context parallel: " + std::to_string(chunks.size()) + " chunks for " +
                           std::to_string(ranks) + " ranks");
  }
  int64_t at = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ContextChunk& c = chunks[i];
    const bool last = i + 1 == chunks.size();
    if (c.begin != at || c.end < c.begin || (!last && c.end % page_tokens != 0)) {
      return InvalidArgument("context parallel: chunk " + std::to_string(i) + " [" +
                             std::to_string(c.begin) + ", " + std::to_string(c.end) +
                             ") does not continue at " + std::to_string(at) +
                             " on a page boundary");
    }
    at = c.end;
  }
  if (at != n || chunks.back().begin == chunks.back().end) {
    return InvalidArgument("context parallel: the chunks must cover the " + std::to_string(n) +
                           "-token prompt and the last one must hold its end");
  }
  return Status::Ok();
}

}  // namespace

std::vector<ContextChunk> PlanContextChunks(int64_t prompt_len, int64_t page_tokens, int ranks) {
  std::vector<ContextChunk> chunks(static_cast<size_t>(ranks));
  const int64_t pages = (prompt_len + page_tokens - 1) / page_tokens;
  // Pages per rank: equal shares, the remainder to the first ranks; the last rank's share
  // ends at the prompt's end. With fewer pages than ranks the first ranks get none.
  int64_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    const int64_t share = pages / ranks + (r >= ranks - pages % ranks ? 1 : 0);
    const int64_t end =
        r + 1 == ranks ? prompt_len : std::min(prompt_len, at + share * page_tokens);
    chunks[static_cast<size_t>(r)] = {at, end};
    at = end;
  }
  return chunks;
}

Status PrefillContextParallel(const Model& model, SequenceState* state,
                              std::span<const int32_t> prompt, std::span<const ContextChunk> chunks,
                              ContextExchange& ex, const ForwardOptions& options,
                              int64_t logits_rows, ForwardOutput* out) {
  const int rank = ex.rank(), ranks = ex.size();
  const auto n = static_cast<int64_t>(prompt.size());
  if (state->length != 0) return InvalidArgument("context parallel: the sequence is not fresh");
  if (options.hooks != nullptr || options.all_logits || options.decoder_replay_keep > 0) {
    return InvalidArgument(
        "context parallel: no hooks, all_logits or decoder-side replay (each rank sees its chunk "
        "only)");
  }
  const KvPageLayout& layout = state->page_layout();
  DI_RETURN_IF_ERROR(CheckChunks(chunks, n, layout.page_tokens, ranks));
  const ContextChunk mine = chunks[static_cast<size_t>(rank)];
  *out = ForwardOutput{};
  if (mine.begin == mine.end) return Status::Ok();  // no pages of this prompt here
  ScopedPhase phase("context_parallel.prefill");
  if (state->prompt_length == 0) state->prompt_length = n;
  DI_RETURN_IF_ERROR(EnsurePages(state, mine.end));
  model.AdoptPositions(state, prompt.first(static_cast<size_t>(mine.begin)));

  std::vector<std::vector<Region>> regions;
  regions.reserve(static_cast<size_t>(model.config().n_layers));
  for (int li = 0; li < model.config().n_layers; ++li) {
    regions.push_back(LayerRegions(layout, model.layers()[static_cast<size_t>(li)]));
  }
  Status failed = Status::Ok();
  ForwardHooks hooks;
  hooks.before_block = [&](int li, uint16_t*, float*, int64_t) {
    if (mine.begin == 0) return;
    ScopedPhase wait("context_parallel.receive");
    const std::vector<Region>& layer_regions = regions[static_cast<size_t>(li)];
    for (int q = 0; q < rank; ++q) {
      const ContextChunk& c = chunks[static_cast<size_t>(q)];
      if (c.begin == c.end) continue;
      if (failed.ok()) {
        StatusOr<std::string> bytes = ex.Receive(q, li);
        failed = bytes.ok() ? UnpackLayer(*bytes, layer_regions, c, q, li, state) : bytes.status();
      }
      if (!failed.ok()) ZeroLayer(layer_regions, c, state);
    }
    const Status ring = model.RestoreRing(state, li);
    if (failed.ok()) failed = ring;
  };
  hooks.after_block = [&](int li, const uint16_t*, const float*, int64_t) {
    if (!failed.ok() || rank + 1 == ranks) return;
    const std::string bytes = PackLayer(*state, regions[static_cast<size_t>(li)], mine);
    for (int t = rank + 1; t < ranks && failed.ok(); ++t) failed = ex.Send(t, li, bytes);
  };
  ForwardOptions fo = options;
  fo.hooks = &hooks;
  const bool last = rank + 1 == ranks;
  const ForwardInput in{
      state,
      prompt.subspan(static_cast<size_t>(mine.begin), static_cast<size_t>(mine.end - mine.begin)),
      last, last ? logits_rows : 1, 0};
  ForwardOutput result;
  const Status s = model.Forward(std::span<const ForwardInput>(&in, 1), fo, &result);
  DI_RETURN_IF_ERROR(failed);
  DI_RETURN_IF_ERROR(s);
  DI_RETURN_IF_ERROR(ex.Flush());
  // The earlier chunks' pages now hold every layer: complete, as a one-rank prefill leaves them.
  for (int64_t page = 0; page < mine.begin / layout.page_tokens; ++page) {
    state->kv_store->header(state->pages[static_cast<size_t>(page)])->complete = 1;
  }
  if (last) *out = std::move(result);
  return Status::Ok();
}

}  // namespace deepinfer::model
