#include "engine/sampling/sampling_params.h"

#include <cmath>
#include <sstream>

namespace deepinfer::engine {
Status ParamRangeError(const char* field, const std::string& value, const std::string& range) {
  return InvalidArgument(std::string(field) + " = " + value + " is out of range: must be " + range);
}

namespace {

Status CheckTokenId(const char* field, int64_t id, int64_t vocab) {
  if (id < 0 || (vocab > 0 && id >= vocab)) {
    return InvalidArgument(std::string(field) + " has token id " + ParamText(id) +
                           (vocab > 0 ? ", outside [0, " + ParamText(vocab) + ")" : ", negative"));
  }
  return Status::Ok();
}

}  // namespace

Status SamplingParams::Validate(int64_t vocab) const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return ParamRangeError("temperature", ParamText(temperature), ">= 0 and finite (0 = greedy)");
  }
  if (top_k < 0) {
    return ParamRangeError("top_k", ParamText(top_k), ">= 0 (0 = off; -1 in JSON = off)");
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return ParamRangeError("top_p", ParamText(top_p), "in (0, 1]");
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return ParamRangeError("min_p", ParamText(min_p), "in [0, 1]");
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return ParamRangeError("repetition_penalty", ParamText(repetition_penalty), "> 0 and finite");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return ParamRangeError("presence_penalty", ParamText(presence_penalty), "in [-2, 2]");
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return ParamRangeError("frequency_penalty", ParamText(frequency_penalty), "in [-2, 2]");
  }
  for (size_t i = 0; i < logit_bias.size(); ++i) {
    const auto& [id, bias] = logit_bias[i];
    DI_RETURN_IF_ERROR(CheckTokenId("logit_bias", id, vocab));
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return ParamRangeError("logit_bias value", ParamText(bias), "in [-100, 100]");
    }
    if (i > 0 && logit_bias[i - 1].first >= id) {
      return InvalidArgument("logit_bias must be sorted by token id without repeats (id " +
                             ParamText(id) + ")");
    }
  }
  if (n < 1 || n > kMaxParallelSamples) return ParamRangeError("n", ParamText(n), "in [1, 128]");
  if (max_tokens && *max_tokens < 1) {
    return ParamRangeError("max_tokens", ParamText(*max_tokens), ">= 1");
  }
  if (min_tokens < 0) return ParamRangeError("min_tokens", ParamText(min_tokens), ">= 0");
  if (max_tokens && min_tokens > *max_tokens) {
    return InvalidArgument("min_tokens = " + ParamText(min_tokens) +
                           " exceeds max_tokens = " + ParamText(*max_tokens));
  }
  for (int32_t id : stop_token_ids) DI_RETURN_IF_ERROR(CheckTokenId("stop_token_ids", id, vocab));
  for (const auto& s : stop) {
    if (s.empty()) return InvalidArgument("stop strings must not be empty");
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return ParamRangeError("top_logprobs", ParamText(top_logprobs), "in [0, 20]");
  }
  if (top_logprobs > 0 && !logprobs) {
    return InvalidArgument("top_logprobs = " + ParamText(top_logprobs) + " needs logprobs = true");
  }
  if (prompt_logprobs && (*prompt_logprobs < 0 || *prompt_logprobs > kMaxTopLogprobs)) {
    return ParamRangeError("prompt_logprobs", ParamText(*prompt_logprobs), "in [0, 20]");
  }
  return Status::Ok();
}

}  // namespace deepinfer::engine
