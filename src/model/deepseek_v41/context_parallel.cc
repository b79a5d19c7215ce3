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
struct LayerRegions {
  std::vector<Region> entries;  // compressed KV and index keys (a KV source's)
  Region tail;
};

LayerRegions RegionsOf(const KvPageLayout& l, const LayerDescriptor& d) {
  const KvPageLayout::Layer& ll = l.layers[static_cast<size_t>(d.index)];
  LayerRegions r;
  if (d.owns_compressor) {
    r.entries.push_back({ll.kv_offset, ll.entries_per_page * l.head_dim * 2});
    if (ll.key_offset >= 0)
      r.entries.push_back({ll.key_offset, ll.entries_per_page * l.index_head_dim * 2});
  }
  r.tail = {ll.tail_offset, l.tail_tokens * l.head_dim * 2};
  return r;
}

// Which ring tails a rank receives: the last rank every one (it ends with the whole sequence,
// whose pages then serve the prefix cache), any other only those of the pages that reach into
// the window before one of its later chunks (the halo its ring is restored from).
struct TailsFor {
  std::span<const ContextChunk> chunks;
  int receiver = 0;
  int ranks = 1;
  int64_t window = 0;
  bool operator()(int64_t page_begin, int64_t page_end) const {
    if (receiver == ranks - 1) return true;
    return std::any_of(chunks.begin(), chunks.end(), [&](const ContextChunk& c) {
      return c.rank == receiver && c.begin < c.end && c.begin >= page_end &&
             c.begin - window < page_end;
    });
  }
};

// Calls fn(bytes of the region in the page, its length) for each region of each page of `chunk`
// a rank whose tails are `tails` receives, in page order (whole pages: a chunk before the last
// ends on a page boundary).
template <typename Fn>
void ForEachRegion(const SequenceState& s, const LayerRegions& regions, const ContextChunk& chunk,
                   const TailsFor& tails, Fn fn) {
  const int64_t p = s.page_layout().page_tokens;
  for (int64_t page = chunk.begin / p; page < chunk.end / p; ++page) {
    uint8_t* base = s.kv_store->page(s.pages[static_cast<size_t>(page)]);
    for (const Region& r : regions.entries) fn(base + r.offset, static_cast<size_t>(r.bytes));
    if (tails(page * p, (page + 1) * p)) {
      fn(base + regions.tail.offset, static_cast<size_t>(regions.tail.bytes));
    }
  }
}

// Layer `li`'s regions of the pages of `chunk` that rank `tails.receiver` gets, concatenated.
std::string PackLayer(const SequenceState& s, const LayerRegions& regions,
                      const ContextChunk& chunk, const TailsFor& tails) {
  std::string bytes;
  ForEachRegion(s, regions, chunk, tails, [&](const uint8_t* at, size_t n) {
    bytes.append(reinterpret_cast<const char*>(at), n);
  });
  return bytes;
}

// Writes what PackLayer of chunk.rank's state gave this rank into this state's pages.
Status UnpackLayer(const std::string& bytes, const LayerRegions& regions, const ContextChunk& chunk,
                   const TailsFor& tails, int li, SequenceState* s) {
  size_t want = 0;
  ForEachRegion(*s, regions, chunk, tails, [&](const uint8_t*, size_t n) { want += n; });
  if (bytes.size() != want) {
    return DataLoss("context parallel: rank " + std::to_string(chunk.rank) + " sent " +
                    std::to_string(bytes.size()) + " bytes for layer " + std::to_string(li) +
                    ", expected " + std::to_string(want));
  }
  const char* from = bytes.data();
  ForEachRegion(*s, regions, chunk, tails, [&](uint8_t* at, size_t n) {
    std::memcpy(at, from, n);
    from += n;
  });
  return Status::Ok();
}

// After a failed receive the forward still runs to its end (a hook cannot stop it): the layer's
// regions of `chunk` are zeroed so that it computes on defined values, and the error is returned.
void ZeroLayer(const LayerRegions& regions, const ContextChunk& chunk, const TailsFor& tails,
               SequenceState* s) {
  ForEachRegion(*s, regions, chunk, tails, [](uint8_t* at, size_t n) { std::memset(at, 0, n); });
}

Status CheckChunks(std::span<const ContextChunk> chunks, int64_t from, int64_t n,
                   int64_t page_tokens, int ranks) {
  int64_t at = from;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ContextChunk& c = chunks[i];
    const bool last = i + 1 == chunks.size();
    if (c.begin != at || c.end < c.begin || (!last && c.end % page_tokens != 0) || c.rank < 0 ||
        c.rank >= ranks) {
      return InvalidArgument(
          "context parallel: chunk " + std::to_string(i) + " [" + std::to_string(c.begin) + ", " +
          std::to_string(c.end) + ") of rank " + std::to_string(c.rank) + " does not continue at " +
          std::to_string(at) + " on a page boundary with a rank of " + std::to_string(ranks));
    }
    at = c.end;
  }
  if (chunks.empty() || at != n || chunks.back().begin == chunks.back().end ||
      chunks.back().rank != ranks - 1) {
    return InvalidArgument("context parallel: the chunks must cover positions " +
                           std::to_string(from) + " to " + std::to_string(n) +
                           " of the prompt and the last one, the last rank's, must hold its end");
  }
  return Status::Ok();
}

}  // namespace

std::vector<ContextChunk> PlanContextChunks(int64_t prompt_len, int64_t page_tokens, int ranks,
                                            int per_rank) {
  const int n_chunks = ranks * per_rank;
  std::vector<ContextChunk> chunks(static_cast<size_t>(n_chunks));
  const int64_t pages = (prompt_len + page_tokens - 1) / page_tokens;
  // Pages per chunk: equal shares, the remainder to the last chunks, so that the last one is
  // never empty; it ends at the prompt's end.
  int64_t at = 0;
  for (int i = 0; i < n_chunks; ++i) {
    const int64_t share = pages / n_chunks + (i >= n_chunks - pages % n_chunks ? 1 : 0);
    const int64_t end =
        i + 1 == n_chunks ? prompt_len : std::min(prompt_len, at + share * page_tokens);
    // Round-robin, ending on the last rank.
    const int rank = ((i - n_chunks) % ranks + ranks) % ranks;
    chunks[static_cast<size_t>(i)] = {at, end, rank};
    at = end;
  }
  return chunks;
}

std::vector<ContextChunk> PlanContextChunks(int64_t from, int64_t prompt_len, int64_t page_tokens,
                                            int ranks, int per_rank) {
  std::vector<ContextChunk> chunks =
      PlanContextChunks(prompt_len - from, page_tokens, ranks, per_rank);
  for (ContextChunk& c : chunks) {
    c.begin += from;
    c.end += from;
  }
  return chunks;
}

Status PrefillContextParallel(const Model& model, SequenceState* state,
                              std::span<const int32_t> prompt, std::span<const ContextChunk> chunks,
                              ContextExchange& ex, const ForwardOptions& options,
                              int64_t logits_rows, ForwardOutput* out, const ChunkHook* on_chunk) {
  const int rank = ex.rank(), ranks = ex.size();
  const auto n = static_cast<int64_t>(prompt.size());
  const int n_layers = model.config().n_layers;
  const int64_t from = state->length;
  if (options.hooks != nullptr || options.all_logits || options.decoder_replay_keep > 0) {
    return InvalidArgument(
        "context parallel: no hooks, all_logits or decoder-side replay (each rank sees its chunk "
        "only)");
  }
  const KvPageLayout& layout = state->page_layout();
  if (from % layout.page_tokens != 0 || from >= n) {
    return InvalidArgument("context parallel: the sequence holds " + std::to_string(from) +
                           " positions, not a page multiple before the prompt's end");
  }
  DI_RETURN_IF_ERROR(CheckChunks(chunks, from, n, layout.page_tokens, ranks));
  *out = ForwardOutput{};
  if (state->prompt_length == 0) state->prompt_length = n;
  ScopedPhase phase("context_parallel.prefill");

  std::vector<LayerRegions> regions;
  regions.reserve(static_cast<size_t>(n_layers));
  for (int li = 0; li < n_layers; ++li) {
    regions.push_back(RegionsOf(layout, model.layers()[static_cast<size_t>(li)]));
  }
  const auto tails_for = [&](int receiver) {
    return TailsFor{chunks, receiver, ranks, model.config().window_size};
  };
  const TailsFor mine = tails_for(rank);
  const auto n_chunks = static_cast<int>(chunks.size());
  const auto tag = [&](int chunk, int li) { return chunk * n_layers + li; };
  // received[j * n_layers + li]: chunk j's layer li is in this rank's pages.
  std::vector<uint8_t> received(static_cast<size_t>(n_chunks * n_layers), 0);
  Status failed = Status::Ok();
  int current = 0;  // the chunk being computed
  ForwardHooks hooks;
  hooks.before_block = [&](int li, uint16_t*, float*, int64_t) {
    ScopedPhase wait("context_parallel.receive");
    const LayerRegions& layer_regions = regions[static_cast<size_t>(li)];
    for (int j = 0; j < current; ++j) {
      const ContextChunk& c = chunks[static_cast<size_t>(j)];
      uint8_t& have = received[static_cast<size_t>(tag(j, li))];
      if (c.rank == rank || c.begin == c.end || have) continue;
      if (failed.ok()) {
        StatusOr<std::string> bytes = ex.Receive(c.rank, tag(j, li));
        failed =
            bytes.ok() ? UnpackLayer(*bytes, layer_regions, c, mine, li, state) : bytes.status();
      }
      if (!failed.ok()) ZeroLayer(layer_regions, c, mine, state);
      have = 1;
    }
    const Status ring = model.RestoreRing(state, li);
    if (failed.ok()) failed = ring;
  };
  hooks.after_block = [&](int li, const uint16_t*, const float*, int64_t) {
    if (!failed.ok()) return;
    std::vector<uint8_t> to(static_cast<size_t>(ranks), 0);
    for (int j = current + 1; j < n_chunks; ++j) {
      const ContextChunk& c = chunks[static_cast<size_t>(j)];
      if (c.rank != rank && c.begin < c.end) to[static_cast<size_t>(c.rank)] = 1;
    }
    for (int t = 0; t < ranks && failed.ok(); ++t) {
      if (!to[static_cast<size_t>(t)]) continue;
      failed = ex.Send(t, tag(current, li),
                       PackLayer(*state, regions[static_cast<size_t>(li)],
                                 chunks[static_cast<size_t>(current)], tails_for(t)));
    }
  };
  ForwardOptions fo = options;
  fo.hooks = &hooks;
  for (current = 0; current < n_chunks; ++current) {
    const ContextChunk& c = chunks[static_cast<size_t>(current)];
    if (c.rank != rank || c.begin == c.end) continue;
    const bool last = current + 1 == n_chunks;
    DI_RETURN_IF_ERROR(EnsurePages(state, c.end));
    if (c.begin > state->length) {
      model.AdoptPositions(state, prompt.first(static_cast<size_t>(c.begin)));
    }
    const bool all_rows = on_chunk != nullptr && on_chunk->all_logits;
    const int64_t rows = all_rows ? c.end - c.begin : last ? logits_rows : 1;
    const ForwardInput in{
        state, prompt.subspan(static_cast<size_t>(c.begin), static_cast<size_t>(c.end - c.begin)),
        last || all_rows, rows, 0};
    ForwardOutput result;
    const Status s = model.Forward(std::span<const ForwardInput>(&in, 1), fo, &result);
    DI_RETURN_IF_ERROR(failed);
    DI_RETURN_IF_ERROR(s);
    if (on_chunk != nullptr && on_chunk->fn) DI_RETURN_IF_ERROR(on_chunk->fn(c, result));
    if (last) *out = std::move(result);
  }
  DI_RETURN_IF_ERROR(ex.Flush());
  // The other ranks' chunks before this rank's last one now hold every layer: complete, as a
  // one-rank prefill leaves them (on the last rank, which got every tail; another rank's state,
  // halos only, is partial and dropped).
  for (int j = 0; j < n_chunks; ++j) {
    const ContextChunk& c = chunks[static_cast<size_t>(j)];
    if (c.rank == rank || c.begin == c.end || !received[static_cast<size_t>(tag(j, n_layers - 1))])
      continue;
    for (int64_t page = c.begin / layout.page_tokens; page < c.end / layout.page_tokens; ++page) {
      state->kv_store->header(state->pages[static_cast<size_t>(page)])->complete = 1;
    }
  }
  return Status::Ok();
}

}  // namespace deepinfer::model
