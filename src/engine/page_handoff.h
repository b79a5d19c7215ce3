// KV hand-off between engines: the pages of prefill/decode disaggregation
// (docs/disaggregation.md).
//
// A prefill engine computes a prompt; every complete page of it is then registered in its prefix
// cache under the chained block keys (kv_cache_manager.h). A hand-off copies those pages, with
// their keys, into another engine's page pool and registers them there under the same keys: the
// receiving engine's next request with that prompt finds them as an ordinary prefix hit
// (AdoptPrefix rebuilds the window and DSpark rings from the pages' tails), so its outputs are a
// colocated run's (the engine contract: a prefix hit never changes an output). The unit is the
// page: the prompt's partial last page (fewer than page_tokens positions) is not handed over; the
// receiver computes it, with the first token.
//
// Integrity: each page travels with its XXH3-64; a bundle carries the sender's fingerprint (model,
// page layout, kernel level, index-key mode: two engines may share pages only when every byte
// means the same to both), which the receiver compares with its own before anything else.
//
// Threads: Engine::ExportPromptPages / ImportPages belong to the engine's owner thread, as Add and
// Step do. ImportPages runs between steps. ExportPromptPages may also run inside a request's
// output callback during a step (the prefill leg exports as its last output is delivered): it
// only reads the prefix cache's map, which nothing else touches then, and registered pages,
// which are complete and never written again. Encode/Decode are pure.
//
// Wire form (little-endian; both ends are x86-64): "DIKV", u32 version 1, u32 fingerprint length
// and its bytes, i64 page_tokens, i64 page_bytes, u32 block count, then per block u64 key.lo,
// u64 key.hi, u64 checksum and page_bytes bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/kv_cache_manager.h"

namespace deepinfer::engine {

struct PageBlock {
  BlockKey key;
  uint64_t checksum = 0;  // XXH3-64 of bytes
  std::string bytes;      // page_bytes of them
};

struct PageBundle {
  std::string fingerprint;
  int64_t page_tokens = 0;
  int64_t page_bytes = 0;
  std::vector<PageBlock> blocks;  // in chain order from the prompt's first block
};

struct ImportResult {
  int64_t imported = 0;  // pages written and registered
  int64_t cached = 0;    // blocks the receiver already held
  int64_t dropped = 0;   // blocks left out: no page could be allocated for them
};

uint64_t PageChecksum(std::string_view bytes);

std::string EncodeBundle(const PageBundle& bundle);
// DataLoss on a malformed bundle (bad magic or version, sizes that do not add up).
StatusOr<PageBundle> DecodeBundle(std::string_view wire);

}  // namespace deepinfer::engine
