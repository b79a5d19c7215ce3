// KV hand-off between engines: the pages of prefill/decode disaggregation
// (docs/disaggregation.md).
//
// A prefill engine computes a prompt; every complete page of it is then registered in its prefix
// cache under the chained block keys (kv_cache_manager.h). A hand-off copies those pages, with
// their keys, into another engine's page pool and registers them there under the same keys: the
// receiving engine's next request with that prompt finds them as an ordinary prefix hit
// (AdoptPrefix rebuilds the window and DSpark rings from the pages' tails), so its outputs are a
// colocated run's (the engine contract: a prefix hit never changes an output).
//
// The sequence's tail. A prefill leg (Request::leg_of_prompt_len) computes all of a prompt but its
// last token, as rows of the whole prompt; as it ends, its engine captures a SequenceTail: the
// runner's state outside the pages (window rings, ratio-2 partial groups, DSpark rings, Engram
// look-back: ModelRunner::SaveSequence) and the partly written last page. A bundle may carry it.
// The receiver keeps the tail (a few, the newest) until a request whose prompt is exactly those
// tokens plus one arrives; that request's hit then reaches the tail's end (its complete pages from
// the cache, the partial one copied into a page of its own, the state restored), so it computes
// one position, the last prompt token, and samples its first token itself with its own
// parameters (seed, grammar, logprobs), as a colocated run would.
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
// Wire form (little-endian; both ends are x86-64): "DIKV", u32 version 2, u32 fingerprint length
// and its bytes, i64 page_tokens, i64 page_bytes, u32 block count, then per block u64 key.lo,
// u64 key.hi, u64 checksum and page_bytes bytes; then u8 1 and the tail (i64 prompt_len, the
// tokens, the state and the partial page as byte arrays, u64 checksum), or u8 0.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/kv_cache_manager.h"
#include "engine/sampling/sampler.h"

namespace deepinfer::engine {

struct PageBlock {
  BlockKey key;
  uint64_t checksum = 0;  // XXH3-64 of bytes
  std::string bytes;      // page_bytes of them
};

// A prefill leg's sequence as it ended: positions [0, tokens.size()) of a prompt of prompt_len
// (= tokens.size() + 1) tokens computed.
struct SequenceTail {
  std::vector<int32_t> tokens;
  int64_t prompt_len = 0;
  std::string state;         // ModelRunner::SaveSequence
  std::string partial_page;  // the page of positions [tokens.size() / P * P, ...); empty when
                             // tokens.size() is a multiple of the page length
  uint64_t checksum = 0;     // TailChecksum
  // Context parallelism only (engine/context_parallel_prefill.h; not on the wire): the prompt
  // logprobs of every prompt position, with that many alternatives, computed where the
  // positions were; a request asking for exactly these continues the tail.
  std::optional<int32_t> prompt_logprobs_k;
  std::vector<SampleResult> prompt_logprobs;
};

struct PageBundle {
  std::string fingerprint;
  int64_t page_tokens = 0;
  int64_t page_bytes = 0;
  std::vector<PageBlock> blocks;             // in chain order from the prompt's first block
  std::shared_ptr<const SequenceTail> tail;  // optional
};

struct ImportResult {
  int64_t imported = 0;    // pages written and registered
  int64_t cached = 0;      // blocks the receiver already held
  int64_t dropped = 0;     // blocks left out: no page could be allocated for them
  bool tail_held = false;  // the bundle's tail is held for its request (all its pages are here)
};

uint64_t PageChecksum(std::string_view bytes);
// XXH3-64 over the tail's prompt length, tokens, state and partial page.
uint64_t TailChecksum(const SequenceTail& tail);
// Whether `tail` continues exactly the complete pages of `bundle`: one page per complete block of
// its positions, a partial page of the bundle's size exactly when its positions end inside one,
// a prompt one token longer.
bool TailFitsBundle(const SequenceTail& tail, const PageBundle& bundle);

std::string EncodeBundle(const PageBundle& bundle);
// DataLoss on a malformed bundle (bad magic or version, sizes that do not add up).
StatusOr<PageBundle> DecodeBundle(std::string_view wire);

}  // namespace deepinfer::engine
