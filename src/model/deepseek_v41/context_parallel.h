// Context parallelism for one prompt's prefill (docs/scaleout.md, "Context parallelism").
//
// The prompt is cut into contiguous chunks on page boundaries, one per rank of a CP group, and
// each rank runs an ordinary prefill of its chunk: the engine contract already makes a chunked
// prefill equal to one-shot prefill, so the only question is where a chunk's view of the earlier
// chunks comes from. A row reads earlier positions only through what a page holds (kv_pages.h):
// the KV sources' compressed entries and index keys, and the window latents of its ring (the
// page tails). Every one of them is written by the layer that reads it or an earlier one (prompt
// rows score owners <= their layer: index_key_schedule.h), so the chunks run as a wavefront:
//
//   rank r, before block L:  receive layer L's page regions of chunks 0..r-1 from their ranks,
//                            restore layer L's window ring from the tails;
//   rank r, after block L:   send layer L's page regions of its chunk to ranks r+1..N-1.
//
// Rank r's block L starts once rank r-1 finished its block L, so N chunks over L layers take
// (N + L - 1) chunk-layer steps instead of N x L (a pipeline fill of N - 1 steps). The last rank
// ends with the whole prompt's state, bit for bit the single-process one: every page (its own
// and the received regions of every layer), its rings, partial groups and Engram history from
// its own chunk. It decodes the sequence (or hands it over, as prefill/decode disaggregation
// does). The other ranks' states are partial and are dropped.
//
// Not here: expert parallelism inside the prefill (the ranks are at different layers, so a
// per-layer all-to-all would not line up: every rank of a CP group holds every expert), prompt
// logprobs of the non-last chunks, DSpark taps of the earlier chunks (the last rank's stage
// rings cover its own chunk only).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

// How the ranks of a CP group reach each other. Tags are layer indexes.
class ContextExchange {
 public:
  virtual ~ContextExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends `bytes` to rank `to`; may return before `to` has received them.
  virtual Status Send(int to, int tag, std::string bytes) = 0;
  // The bytes rank `from` sent with `tag` (waits for them).
  virtual StatusOr<std::string> Receive(int from, int tag) = 0;
  // Waits until every Send of this rank has been delivered.
  virtual Status Flush() = 0;
};

struct ContextChunk {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
};

// [0, prompt_len) as `ranks` contiguous chunks: boundaries on multiples of `page_tokens`, sizes
// as equal as that allows (the last chunk takes the remainder). Chunks may be empty when the
// prompt has fewer pages than ranks; an empty chunk's rank only relays nothing.
std::vector<ContextChunk> PlanContextChunks(int64_t prompt_len, int64_t page_tokens, int ranks);

// Rank ex.rank()'s part of the prefill of `prompt` over `chunks` (PlanContextChunks of its
// length and state's page length, one chunk per rank of `ex`). `state` is fresh, with its
// prompt_length set (or 0: the whole prompt). On the last rank, `out` receives what
// Model::Forward gives for the last chunk (logits of its last logits_rows rows; taps of its rows
// when options.want_taps). On the others, `out` is left empty. Every rank must call it with the
// same prompt and chunks; an error on one rank leaves the others waiting (an MPI job ends).
Status PrefillContextParallel(const Model& model, SequenceState* state,
                              std::span<const int32_t> prompt, std::span<const ContextChunk> chunks,
                              ContextExchange& ex, const ForwardOptions& options,
                              int64_t logits_rows, ForwardOutput* out);

}  // namespace deepinfer::model
