// ModelRunner: what the engine needs from a model, so the scheduler, the KV cache system and the
// step loop can be tested with a fake model in milliseconds (tests/engine/fake_runner.h) and run
// the real one (engine/deepseek_runner.h) unchanged.
//
// Contract:
//   * pages are ids handed out by the engine's KvCacheManager; the runner owns their storage
//     (capacity fixed by InitPages) and writes the long-range state of positions [i*P, (i+1)*P)
//     of a sequence into the page at index i of its page table;
//   * before Forward, the engine has set every input's page table to cover all positions the
//     call consumes;
//   * Forward returns, in input order, the logits of each input's last `logits_rows` tokens
//     (position order; unspecified values for an input with !want_logits, e.g. a prefill chunk
//     before the last);
//   * a sequence handle belongs to one engine sequence at a time; dropping it frees its
//     per-sequence memory, never pages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace deepinfer::engine {

class RunnerSequence {
 public:
  virtual ~RunnerSequence() = default;
  virtual int64_t length() const = 0;  // positions consumed
};

struct RunnerInput {
  RunnerSequence* seq = nullptr;
  std::span<const int32_t> tokens;  // continue the sequence at seq->length()
  // Its whole page table after this call's reservation. The runner keeps this view (no copy)
  // and reads it during this call and the speculation calls that follow it in the same step
  // (EndSpeculation, Draft); the engine does not change the table in between.
  std::span<const int32_t> pages;
  bool want_logits = true;  // false: the row of logits may be left unspecified
  // Speculative decoding (engine/spec/): rows of logits this input returns, its last
  // `logits_rows` (a verify input: the last accepted token and its drafts, all of them).
  int64_t logits_rows = 1;
  // A verify input: the runner keeps what it needs to roll the call back; the engine calls
  // EndSpeculation(seq, kept length) after the Forward, before anything else uses the sequence.
  bool speculative = false;
  // A prefill chunk: the position its prefill ends at (the tokens the sequence holds); lets a
  // runner with decoder-side bounded replay skip rows (model/deepseek_v41/decoder_replay.h).
  // 0 = a decode or verify input.
  int64_t prefill_end = 0;
};

// Drafts for the positions after a sequence's next token (ModelRunner::Draft).
struct DraftProposal {
  std::vector<int32_t> tokens;
  // Raw confidence logit per draft: sigmoid = P(draft accepted | the drafts before accepted).
  std::vector<float> confidence;
  // [tokens][vocab]: the distribution each draft was sampled from; empty = drafts chosen
  // deterministically (greedy), i.e. a point mass on each draft.
  std::vector<float> probs;
};

struct DraftRequest {
  int32_t token = 0;  // the sequence's next token (sampled, not yet consumed)
  int64_t max_drafts = 0;
  // Picks draft i among the drafter's ranked ids (ascending; `logits` are theirs) and returns
  // its index; the proposal stays a deterministic one (DraftProposal::probs empty). Null: the
  // first maximum (greedy drafts).
  using Chooser = std::function<StatusOr<int64_t>(int64_t draft, std::span<const float> logits)>;
  Chooser choose;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual int64_t vocab_size() const = 0;
  virtual int32_t eos_token_id() const = 0;
  // Positions per page (a multiple of every compress ratio and candidate block).
  virtual int64_t page_tokens() const = 0;
  virtual int64_t page_bytes() const = 0;
  // Per-sequence bytes outside pages (window rings, partial groups).
  virtual int64_t sequence_bytes() const = 0;
  // Longest sequence (prompt + output) the model accepts.
  virtual int64_t max_positions() const = 0;

  // Whether a position's state depends on which positions were prompt rows, not only on the
  // tokens (DeepSeek-V4.1 in official index-key mode); the prefix cache then keys blocks by it.
  virtual bool prompt_sensitive() const { return false; }

  // Allocates the storage of `n_pages` pages; called once before any sequence exists.
  virtual Status InitPages(int64_t n_pages) = 0;
  // A sequence whose first `prompt_len` positions are its prompt: however its positions are
  // split into calls (chunks, prefix hits, verify rows, recompute after a preemption), prompt
  // positions get the results of one prefill and every later position those of one decode step.
  virtual std::unique_ptr<RunnerSequence> NewSequence(int64_t prompt_len) = 0;
  // Continues a fresh sequence from complete cached pages holding `tokens` (a multiple of
  // page_tokens) so that the result equals having run them.
  virtual Status AdoptPrefix(RunnerSequence* seq, std::span<const int32_t> pages,
                             std::span<const int32_t> tokens) = 0;
  // Parallel samples (n > 1): a new sequence in the state `parent` is in (same positions, its
  // own copy of every per-sequence cache; its page table is given by the next Forward), and a
  // page copied into another (the parent's last, partly written page). A runner without them
  // returns Unimplemented and the engine computes each sample's prompt on its own.
  virtual StatusOr<std::unique_ptr<RunnerSequence>> Fork(const RunnerSequence& parent) {
    (void)parent;
    return Unimplemented("this model runner cannot fork sequences");
  }
  virtual Status CopyPage(int32_t from, int32_t to) {
    (void)from;
    (void)to;
    return Unimplemented("this model runner cannot copy pages");
  }
  // The page_bytes() bytes of a page: everything the page holds (header, KV entries, index keys,
  // ring tails), which a KV hand-off copies between engines (engine/page_handoff.h). Empty: this
  // runner cannot hand pages over.
  virtual std::span<uint8_t> PageBytes(int32_t /*page*/) { return {}; }
  // A KV hand-off with the sequence's tail (engine/page_handoff.h): everything `seq` holds
  // outside its pages, as bytes; and a fresh sequence (NewSequence with the sender's prompt
  // length) continued from such bytes and a page table holding the sender's pages (its complete
  // ones and a copy of its partly written last one), equal to the sender's sequence.
  // Unimplemented: this runner hands complete pages over only.
  virtual StatusOr<std::string> SaveSequence(const RunnerSequence& /*seq*/) {
    return Unimplemented("this model runner cannot save a sequence's state");
  }
  virtual Status RestoreSequence(RunnerSequence* /*seq*/, std::span<const int32_t> /*pages*/,
                                 std::string_view /*state*/) {
    return Unimplemented("this model runner cannot restore a sequence's state");
  }
  // One forward over a mixed batch. Logits rows in input order: logits_rows rows per input
  // (1 by default; contents unspecified for an input with !want_logits), [rows][vocab].
  // *logits may arrive holding the previous call's buffer: size it, then overwrite every row
  // that has logits (reusing the buffer spares an allocation and its clearing).
  virtual Status Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) = 0;

  // Speculative decoding (optional; the defaults have no drafter). EnableDrafts is called once
  // by an engine with speculation on, before any sequence exists (a runner may then keep extra
  // per-sequence state, e.g. the DSpark rings). Draft proposes up to max_drafts tokens for a
  // sequence whose every token but `token` is consumed. EndSpeculation keeps the first
  // kept_length positions of a sequence after a speculative Forward and undoes the rest.
  virtual Status EnableDrafts() { return Unimplemented("this model runner has no drafter"); }
  virtual int64_t max_drafts() const { return 0; }
  virtual Status Draft(RunnerSequence* /*seq*/, const DraftRequest& /*request*/,
                       DraftProposal* /*out*/) {
    return Unimplemented("this model runner has no drafter");
  }
  virtual Status EndSpeculation(RunnerSequence* /*seq*/, int64_t /*kept_length*/) {
    return Unimplemented("this model runner cannot roll back");
  }
};

}  // namespace deepinfer::engine
