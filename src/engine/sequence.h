// Sequence: the engine-owned state of one request (docs/engine_contract.md).
//
// tokens = prompt + accepted output. Positions [0, computed) are in the model's state (its
// runner sequence and its pages); the next forward call consumes tokens [computed, computed+n).
// When computed reaches tokens.size(), the call's logits choose the next token.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/model_runner.h"
#include "engine/page_handoff.h"
#include "engine/request.h"
#include "engine/sampling/token_history.h"
#include "structured/grammar_matcher.h"

namespace deepinfer::engine {

namespace spec {
struct SpecSequence;  // engine/spec/spec_decoder.h
}

enum class SequenceStatus { kWaiting, kRunning, kFinished };

struct Sequence {
  uint64_t id = 0;
  uint64_t arrival = 0;  // admission order (FCFS)
  Request request;
  uint64_t seed = 0;
  SequenceStatus status = SequenceStatus::kWaiting;

  std::vector<int32_t> tokens;  // prompt + output
  int64_t prompt_len = 0;
  int64_t computed = 0;
  std::vector<int32_t> pages;              // page table: page i holds positions [i*P, (i+1)*P)
  std::vector<BlockKey> block_keys;        // chained keys of the full blocks of `tokens`
  int64_t registered_blocks = 0;           // blocks registered in the prefix cache
  std::unique_ptr<RunnerSequence> runner;  // null while waiting
  TokenHistory history;
  // Structured output: the matcher once the constraint is active (from the start, or after
  // the request's grammar_start_token), and the mask of the next token.
  std::unique_ptr<structured::GrammarMatcher> matcher;
  std::vector<uint32_t> mask;
  int64_t prefix_hit_tokens = 0;
  // Parallel samples (n > 1): the first sample computes the prompt; the others (fork_ids) wait
  // with fork_of set to its id and then continue from its state, sharing its full prompt pages.
  std::vector<uint64_t> fork_ids;
  uint64_t fork_of = 0;
  // params.prompt_logprobs: entry i for prompt token i + 1; `prompt_logprobs_done` positions of
  // the prompt have been through the model with their logits read (a recompute skips them).
  std::vector<SampleResult> prompt_logprobs;
  int64_t prompt_logprobs_done = 0;
  int preemptions = 0;
  std::optional<FinishReason> finish;
  // Speculative decoding (engine/spec/): drafting state, and the drafts the next step verifies.
  std::shared_ptr<spec::SpecSequence> spec;
  int64_t draft_rows = 0;
  // KV hand-off (page_handoff.h): a tail this sequence's prompt continues from (until its first
  // admission takes it); and, for a prefill leg, its own tail, captured as it ends.
  std::shared_ptr<const SequenceTail> tail_in;
  std::shared_ptr<const SequenceTail> tail_out;

  int64_t n_output() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - computed; }
  // Extends block_keys over every full block of `tokens`; key_prompt_rows: the keys say which
  // positions were prompt rows (ModelRunner::prompt_sensitive).
  void UpdateBlockKeys(int64_t block_tokens, bool key_prompt_rows);
};

}  // namespace deepinfer::engine
