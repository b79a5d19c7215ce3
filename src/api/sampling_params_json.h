// The API's sampling fields -> engine::SamplingParams: one reader for the server's request bodies
// and `generate --batch` lines.
//
// Reads the OpenAI field names (max_tokens, temperature, top_p, top_k, min_p, seed, n, stop,
// stop_token_ids, ignore_eos, min_tokens, presence_penalty, frequency_penalty,
// repetition_penalty, logit_bias, logprobs, top_logprobs, prompt_logprobs) from a JSON object and
// validates them without a vocabulary (SamplingParams::Validate(0); Engine::Add checks token ids
// against the model's vocabulary). A null field counts as absent; unknown fields are ignored (the
// caller decides about them). Accepted spellings beyond the plain ones:
//   stop: a string or a list of strings;  top_k: -1 also means off (vLLM);
//   logprobs: a bool (chat API) or an integer k (completions API: logprobs on, top_logprobs = k);
//   seed: any 64-bit integer (negative ones are taken modulo 2^64).
// Errors are InvalidArgument naming the field. Fields the body leaves out keep their value in
// `base` (the engine's defaults, or a model's generation_config.json: api/generation_config.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "engine/sampling/sampling_params.h"

namespace deepinfer::api {

StatusOr<engine::SamplingParams> SamplingParamsFromJson(const nlohmann::json& body,
                                                        const engine::SamplingParams& base = {});

}  // namespace deepinfer::api
