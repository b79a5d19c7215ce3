// SamplingParams: what a request asks of the sampler and of the stop logic, with validation
// (Engine::Add runs it; the JSON mapping of the API fields is api/sampling_params_json.h).
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer::engine {

// Largest top_logprobs / prompt_logprobs accepted (OpenAI's limit, vLLM's default max_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

// The error every reader of sampling parameters gives for a value outside its range:
// "<field> = <value> is out of range: must be <range>" (InvalidArgument).
Status ParamRangeError(const char* field, const std::string& value, const std::string& range);
// A value as the messages above print it (its stream form: 0.5, 1e-05, 128).
template <typename T>
std::string ParamText(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
// Largest n (parallel samples per prompt) accepted, as OpenAI.
inline constexpr int kMaxParallelSamples = 128;

inline constexpr float kGreedyTemperature = 1e-5f;

struct SamplingParams {
  // Processing order in the sampler (engine/sampling/sampler.h): logit_bias -> penalties ->
  // mask/suppression -> (greedy argmax | /temperature -> top_k -> top_p -> min_p -> sample).
  float temperature = 1.0f;         // 0 = greedy (exact argmax, ties to the lower id)
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // (0, 1]; 1 = off
  float min_p = 0.0f;               // [0, 1]; 0 = off; relative to the most likely token
  float repetition_penalty = 1.0f;  // > 0; 1 = off; on every id of prompt + generated
  float presence_penalty = 0.0f;    // [-2, 2]; on generated ids
  float frequency_penalty = 0.0f;   // [-2, 2]; times the generated count
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, bias in [-100, 100]), by id

  std::optional<uint64_t> seed;  // absent: the engine draws one and reports it
  int32_t n = 1;                 // parallel samples sharing the prompt, [1, 128]

  std::optional<int64_t> max_tokens;  // absent: until the context is full
  int64_t min_tokens = 0;             // stop ids/strings and EOS are suppressed until then
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;  // stop strings, each non-empty

  bool logprobs = false;                   // report the sampled token's logprob
  int32_t top_logprobs = 0;                // [0, 20]; needs logprobs
  std::optional<int32_t> prompt_logprobs;  // [0, 20]: top-k per prompt position (0: only its own)

  // Temperatures below 1e-5 count as 0 (as vLLM): 1 / T must stay finite for the scaled logits.
  bool greedy() const { return temperature < kGreedyTemperature; }

  // Checks every range. vocab > 0 also checks token ids (logit_bias, stop_token_ids) against
  // [0, vocab); vocab <= 0 skips those checks (the model is not known yet).
  Status Validate(int64_t vocab) const;
};

}  // namespace deepinfer::engine
