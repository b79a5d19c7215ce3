// Request: what a caller (the generate command, the HTTP server) hands the engine, and what it
// gets back. The engine-owned state of a running request is a Sequence (sequence.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/sampling_params.h"
#include "structured/compiled_grammar.h"

namespace deepinfer::engine {

struct SequenceTail;  // page_handoff.h

enum class FinishReason { kStop, kLength, kAbort, kError };

const char* FinishReasonName(FinishReason r);  // "stop", "length", "abort", "error"

// One delivery on a request's output channel: the tokens accepted in one engine step.
struct RequestOutput {
  uint64_t request_id = 0;
  int64_t sample_index = 0;  // Request::sample_index of this sample (n > 1: base + i)
  std::vector<int32_t> new_tokens;
  std::vector<SampleResult> samples;     // per new token when params.logprobs
  int64_t n_output = 0;                  // output tokens so far, new ones included
  std::optional<FinishReason> finished;  // set on the last delivery
  Status error;                          // kError: why
  uint64_t seed = 0;                     // the seed sampling used (drawn when none was given)
  int64_t prefix_hit_tokens = 0;         // prompt positions served by the prefix cache
  // params.prompt_logprobs, on the first delivery: entry i is prompt token i + 1 (the first
  // prompt token has none), with the top prompt_logprobs alternatives of that position.
  std::vector<SampleResult> prompt_logprobs;
  // A prefill leg (Request::leg_of_prompt_len) that ended as asked, on its last delivery: its
  // sequence's tail for a KV hand-off (page_handoff.h); null when the runner cannot save one.
  std::shared_ptr<const SequenceTail> tail;
};

// Whether a request ended, and as asked (a stop, or its length), not aborted or failed: from its
// finish reason (none: not ended), or from a delivery (its last one).
inline bool EndedAsAsked(const std::optional<FinishReason>& finish) {
  return finish && (*finish == FinishReason::kStop || *finish == FinishReason::kLength);
}
inline bool EndedAsAsked(const RequestOutput& o) { return EndedAsAsked(o.finished); }

struct Request {
  std::vector<int32_t> prompt;
  SamplingParams params;
  // Which sample this is (keys the random stream). With params.n > 1 the engine runs samples
  // sample_index .. sample_index + n - 1, all delivered through on_output with their index.
  int64_t sample_index = 0;
  int priority = 0;  // lower runs first; ties by arrival (FCFS)
  // Output channel: called on the engine's thread after every step that produced tokens for
  // this request, and once with `finished` set. Must not call back into the engine.
  std::function<void(const RequestOutput&)> on_output;
  // Optional stop-string check (the caller owns the tokenizer), called once after every
  // appended token with the output so far: returns true when the output must end after its
  // last token (honoured from min_tokens on).
  std::function<bool(std::span<const int32_t> output)> stop_check;
  // Structured output: every sampled token must keep the output inside this grammar (its
  // vocabulary is the model's). With grammar_start_token set (thinking mode: the id of
  // `</think>`), the constraint starts after that token has been generated.
  std::shared_ptr<const structured::CompiledGrammar> grammar;
  std::optional<int32_t> grammar_start_token;
  // n > 1: Add calls this once for every further sample with its copy of this request
  // (sample_index already set), so the caller can give each sample its own stop_check state
  // and output routing; without it the copies share the callables and their captures.
  std::function<void(Request* sample)> prepare_sample;
  // Set (from any thread) to cancel; the engine finishes the request with kAbort at its next
  // step and frees its pages.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // Speculative decoding for this request when the engine has it on (false: plain decoding).
  bool speculative = true;
  // The prefill leg of disaggregation (page_handoff.h): `prompt` is all but the last token of a
  // prompt of leg_of_prompt_len (= prompt.size() + 1) tokens, computed as rows of that prompt;
  // the request's last delivery carries the sequence's tail (RequestOutput::tail). Its output
  // (max_tokens 1) is not the prompt's first token and is not meant for anyone. 0: a request.
  int64_t leg_of_prompt_len = 0;
};

}  // namespace deepinfer::engine
