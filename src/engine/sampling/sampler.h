// The sampler: one token (with logprobs) from one row of logits, deterministically.
//
// Processing order (as vLLM's sampler, with logit_bias first):
//   1. logit_bias: x[id] += bias
//   2. penalties: repetition on every id of prompt + output (x / r if x > 0, else x * r), then
//      frequency (x -= f * count) and presence (x -= p) on generated ids
//   3. mask and suppression: tokens outside allowed_bits, and the suppressed ids, become -inf
//   4. temperature 0: greedy, the first index of the maximum (ties go to the lower id);
//      logprobs are log_softmax of the processed logits (temperature 1, no truncation).
//   5. otherwise e = exp((x - max) / T), so the most likely token has e = 1 exactly, then
//      top_k:  keep e >= the k-th largest e (ties at the boundary are all kept)
//      top_p:  among those, keep e >= the largest v whose upper set {e >= v} has mass >= p times
//              the mass of the top_k set (ties at the boundary all kept)
//      min_p:  keep e >= min_p (min_p times the largest probability)
//      and sample by inverse CDF over the kept ids in ascending id order with the uniform
//      PhiloxUniformDouble(seed, sample_index, position, lane 0). Logprobs are of this
//      renormalized kept distribution: log(e / sum of kept e); dropped tokens have -inf.
// The token is a function of (logits, params, history, seed, sample_index, position, mask)
// alone: never of batch neighbours, threads or the CPU level (the vector and scalar passes are
// bit-identical, kernels/cpu/sampling_passes.h).
//
// Cost per row at vocab 129,280 with AVX-512: four vector passes over the row plus work on a
// candidate set; top_k / top_p never sort the vocabulary: the exp pass measures the mass above
// fixed thresholds, the candidates above the highest sufficient threshold are compacted, and
// a radix select on their bit patterns finds the top_p boundary (top_p_select.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/token_history.h"

namespace deepinfer::engine {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct SampleResult {
  int32_t token = -1;
  // Of `token` in the distribution sampled from (see above). Greedy rows compute it only when
  // params.logprobs (it costs an exp pass over the vocabulary); otherwise it is 0.
  float logprob = 0.0f;
  // min(params.top_logprobs, kept tokens) most likely tokens by (logprob desc, id asc); empty
  // unless params.logprobs.
  std::vector<TokenLogprob> top;
};

// Samples one token from logits[0, vocab). allowed_bits (nullable): bit (t % 32) of word t / 32
// set = token t allowed (the structured-output mask). suppressed: ids that must not be sampled
// (e.g. EOS and stop ids before min_tokens). Errors: params failing Validate(vocab), an id of
// history / suppressed outside the vocabulary, NaN or +inf logits, or no token left to sample.
// Scratch memory is per thread and grows once to the vocabulary size.
Status SampleOne(const float* logits, int64_t vocab, const SamplingParams& params,
                 const TokenHistory& history, uint64_t seed, int64_t sample_index, int64_t position,
                 const uint32_t* allowed_bits, std::span<const int32_t> suppressed,
                 SampleResult* out);

// One row of a batch: pointers stay owned by the caller.
struct SampleRow {
  const float* logits = nullptr;  // [vocab]
  const SamplingParams* params = nullptr;
  const TokenHistory* history = nullptr;  // nullptr = empty
  uint64_t seed = 0;
  int64_t sample_index = 0;
  int64_t position = 0;
  const uint32_t* allowed_bits = nullptr;
  std::span<const int32_t> suppressed;
};

// SampleOne for one row whose params already passed Validate(vocab) (the engine's rows: a
// request is validated once, at Engine::Add).
Status SampleValidatedRow(const SampleRow& row, int64_t vocab, SampleResult* out);

// SampleValidatedRow for every row (params validated), rows spread over `pool`
// (ThreadPool::Default() when nullptr). out.size() must equal rows.size(). Returns each row's
// status: a failed row (its out entry unspecified) fails that row alone.
std::vector<Status> SampleBatch(std::span<const SampleRow> rows, int64_t vocab,
                                std::span<SampleResult> out, ThreadPool* pool = nullptr);

// Prompt logprobs: for each row r of logits ([n_rows, vocab], rows `row_stride` floats apart),
// the log_softmax (temperature 1, raw logits) of next_ids[r] in out[r].token/logprob and the k
// most likely tokens in out[r].top (k in [0, 20]).
Status ComputePromptLogprobs(const float* logits, int64_t n_rows, int64_t row_stride, int64_t vocab,
                             std::span<const int32_t> next_ids, int k, std::span<SampleResult> out,
                             ThreadPool* pool = nullptr);

}  // namespace deepinfer::engine
