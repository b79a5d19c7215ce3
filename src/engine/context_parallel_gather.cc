#include "engine/context_parallel_gather.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "core/byte_io.h"
#include "model/deepseek_v41/kv_pages.h"
#include "model/deepseek_v41/rollback.h"

namespace deepinfer::engine {
namespace {

std::string EncodeScored(const ScoredRows& rows) {
  std::string out;
  PutValue(&out, static_cast<uint64_t>(rows.size()));
  for (const auto& [first, results] : rows) {
    PutValue(&out, first);
    PutValue(&out, static_cast<uint64_t>(results.size()));
    for (const SampleResult& r : results) {
      PutValue(&out, r.token);
      PutValue(&out, r.logprob);
      PutArray(&out, r.top);
    }
  }
  return out;
}

// Writes the rows of `bytes` into `all` (entries [0, all->size())), counting them in `filled`.
Status DecodeScored(std::string_view bytes, std::vector<SampleResult>* all, int64_t* filled) {
  ByteReader in(bytes);
  uint64_t runs = 0;
  const auto malformed = [] {
    return DataLoss("context parallel: malformed prompt logprobs from a rank");
  };
  if (!in.Get(&runs)) return malformed();
  for (uint64_t i = 0; i < runs; ++i) {
    int64_t first = 0;
    uint64_t n = 0;
    if (!in.Get(&first) || !in.Get(&n) || first < 0 ||
        n > all->size() - std::min<size_t>(all->size(), static_cast<size_t>(first))) {
      return malformed();
    }
    for (uint64_t j = 0; j < n; ++j) {
      SampleResult& r = (*all)[static_cast<size_t>(first) + j];
      if (!in.Get(&r.token) || !in.Get(&r.logprob) || !in.GetArray(&r.top)) return malformed();
    }
    *filled += static_cast<int64_t>(n);
  }
  return in.left() == 0 ? Status::Ok() : malformed();
}

// Calls fn(bytes, length) for each DSpark stage tail of each page of rank `rank`'s chunks, in
// chunk, page and stage order (whole pages: only the last chunk, the decoding rank's, may end
// inside one, and it is never sent).
template <typename Fn>
void ForEachDSparkTail(const model::SequenceState& s, std::span<const model::ContextChunk> chunks,
                       int rank, Fn fn) {
  const model::KvPageLayout& l = s.page_layout();
  const auto bytes = static_cast<size_t>(l.tail_tokens * l.head_dim * 2);
  for (const model::ContextChunk& c : chunks) {
    if (c.rank != rank) continue;
    for (int64_t page = c.begin / l.page_tokens; page < c.end / l.page_tokens; ++page) {
      uint8_t* base = s.kv_store->page(s.pages[static_cast<size_t>(page)]);
      for (const int64_t offset : l.dspark_tail_offset) fn(base + offset, bytes);
    }
  }
}

}  // namespace

// Prompt logprobs: the ranks' scored rows to the decoding rank (the group's last), which returns
// all `n` entries in order (the others: none).
StatusOr<std::vector<SampleResult>> GatherScored(model::ContextExchange& group, int tag,
                                                 const ScoredRows& mine, int64_t n) {
  const int decoder = group.size() - 1;
  if (group.rank() != decoder) {
    DI_RETURN_IF_ERROR(group.Send(decoder, tag, EncodeScored(mine)));
    return std::vector<SampleResult>();
  }
  std::vector<SampleResult> all(static_cast<size_t>(n));
  int64_t filled = 0;
  for (const auto& [first, results] : mine) {  // the decoding rank's own rows
    std::copy(results.begin(), results.end(), all.begin() + first);
    filled += static_cast<int64_t>(results.size());
  }
  for (int r = 0; r < decoder; ++r) {
    DI_ASSIGN_OR_RETURN(std::string bytes, group.Receive(r, tag));
    DI_RETURN_IF_ERROR(DecodeScored(bytes, &all, &filled));
  }
  if (filled != n) {
    return DataLoss("context parallel: " + std::to_string(filled) + " of " + std::to_string(n) +
                    " prompt positions scored");
  }
  return all;
}

// DSpark: each rank's chunks' stage page tails to the decoding rank, which then rebuilds its
// stage rings from the pages (model::RestoreDSparkFromTails): its state then drafts as one
// process's would.
Status GatherDSparkTails(model::ContextExchange& group, int tag,
                         std::span<const model::ContextChunk> chunks, model::SequenceState* s) {
  const int decoder = group.size() - 1;
  if (group.rank() != decoder) {
    std::string bytes;
    ForEachDSparkTail(*s, chunks, group.rank(), [&](const uint8_t* at, size_t n) {
      bytes.append(reinterpret_cast<const char*>(at), n);
    });
    return group.Send(decoder, tag, std::move(bytes));
  }
  for (int r = 0; r < decoder; ++r) {
    DI_ASSIGN_OR_RETURN(std::string bytes, group.Receive(r, tag));
    size_t want = 0;
    ForEachDSparkTail(*s, chunks, r, [&](const uint8_t*, size_t n) { want += n; });
    if (bytes.size() != want) {
      return DataLoss("context parallel: rank " + std::to_string(r) + " sent " +
                      std::to_string(bytes.size()) + " bytes of DSpark tails, expected " +
                      std::to_string(want));
    }
    const char* from = bytes.data();
    ForEachDSparkTail(*s, chunks, r, [&](uint8_t* at, size_t n) {
      std::memcpy(at, from, n);
      from += n;
    });
  }
  // The last chunk (this rank's) extended its own rows; the window positions before it come
  // from the pages.
  return model::RestoreDSparkFromTails(s, chunks.back().begin);
}

}  // namespace deepinfer::engine
