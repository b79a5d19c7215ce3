// Context parallelism for one prompt's prefill (docs/scaleout.md, "Context parallelism").
//
// The prompt is cut into contiguous chunks on page boundaries, dealt round-robin to the ranks of
// a CP group (k per rank), and each rank runs an ordinary prefill of each of its chunks in turn:
// the engine contract already makes a chunked prefill equal to one-shot prefill, so the only
// question is where a chunk's view of the earlier chunks comes from. A row reads earlier positions
// only through what a page holds (kv_pages.h): the KV sources' compressed entries and index keys,
// and the window latents of its ring (the page tails). Every one of them is written by the layer
// that reads it or an earlier one (prompt rows score owners <= their layer: index_key_schedule.h),
// so the chunks run as a wavefront:
//
//   chunk c, before block L:  receive layer L's page regions of the earlier chunks other ranks
//                             computed (once each), restore layer L's window ring from the tails;
//   chunk c, after block L:   send layer L's page regions of chunk c to every rank that computes
//                             a later chunk (the ring tails only where the receiver needs them:
//                             every page to the last rank, the window before its next chunk to
//                             any other).
//
// Between its chunks a rank adopts the positions the others computed (Model::AdoptPositions).
// Chunk c's block L starts once chunk c-1's block L is done: with one chunk per rank, N chunks
// over L layers take N + L - 1 chunk-layer steps against N x L on one rank, so the pipeline's fill
// is (L - 1) steps; k chunks per rank shrink each step k-fold (simulated, 4 layers at 2 ranks:
// 1.25 / 1.125 / 1.06 x the ideal for k = 1 / 2 / 4; 40 layers: 1.03 / 1.01 / 1.01), and
// round-robin spreads the causal attention work, which grows with the position, over the ranks.
// The last chunk's rank ends with the whole prompt's state, bit for bit the single-process one:
// every page (its own and the received regions of every layer), its rings, partial groups and
// Engram history from its own last chunk. It decodes the sequence (or hands it over, as
// prefill/decode disaggregation does). The other ranks' states are partial and are dropped.
//
// The engine's side (a cached prefix first, the sequence handed to the decoding rank's engine):
// engine/context_parallel_prefill.h.
//
// Not here: expert parallelism inside the prefill (the ranks are at different layers, so a
// per-layer all-to-all would not line up: every rank of a CP group holds every expert), DSpark
// taps of the earlier chunks (the last rank's stage rings cover its own chunk only).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

// How the ranks of a CP group reach each other. A tag is chunk * n_layers + layer.
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
  int rank = 0;     // the CP rank that computes it
};

// [0, prompt_len) as ranks x per_rank contiguous chunks in order, dealt round-robin so that the
// last one (the prompt's end) is the last rank's: boundaries on multiples of `page_tokens`, sizes
// as equal as that allows (the last chunk takes the remainder). With fewer pages than chunks the
// first chunks are empty (begin == end; nothing to compute or send).
std::vector<ContextChunk> PlanContextChunks(int64_t prompt_len, int64_t page_tokens, int ranks,
                                            int per_rank = 1);
// The same over positions [from, prompt_len), `from` a page multiple (a prefix every rank holds).
std::vector<ContextChunk> PlanContextChunks(int64_t from, int64_t prompt_len, int64_t page_tokens,
                                            int ranks, int per_rank);

// Rank ex.rank()'s part of the prefill of `prompt` over `chunks` (PlanContextChunks of its
// length and state's page length over the ranks of `ex`, shifted by the prefix). `state` is
// fresh, with its prompt_length set (or 0: the whole prompt), or holds an adopted prefix of
// whole pages (Model::AdoptPrefix, the same on every rank), where the first chunk begins. On the
// rank of the last chunk (the last rank), `out` receives what Model::Forward gives for it (logits
// of its last logits_rows rows; taps of its rows when options.want_taps). On the others, `out` is
// left empty. Every rank must call it with the same prompt and chunks; an error on one rank leaves
// the others waiting (an MPI job ends). `on_chunk`, when given, sees what Model::Forward gave for
// every chunk this rank computes, right after it (the state then holds the chunk's positions):
// its taps with options.want_taps (DSpark), and with all_logits the logits of all its rows
// ([rows][vocab]; prompt logprobs: row r scores prompt token r + 1).
struct ChunkHook {
  bool all_logits = false;
  std::function<Status(const ContextChunk&, const ForwardOutput&)> fn;
};
Status PrefillContextParallel(const Model& model, SequenceState* state,
                              std::span<const int32_t> prompt, std::span<const ContextChunk> chunks,
                              ContextExchange& ex, const ForwardOptions& options,
                              int64_t logits_rows, ForwardOutput* out,
                              const ChunkHook* on_chunk = nullptr);

}  // namespace deepinfer::model
