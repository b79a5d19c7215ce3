// A model folder's generation_config.json (the Hugging Face file a released checkpoint carries):
// the sampling defaults a server gives every request that leaves a field out, as vLLM's
// `--generation-config auto` and SGLang's model sampling defaults do. A request's own field
// always wins.
//
// Read keys (the sampling ones vLLM reads): temperature, top_p, top_k, min_p,
// repetition_penalty, and max_new_tokens (the default max_tokens; the server cuts it to the
// context a prompt leaves: server/chat_request.h). Every other key (bos_token_id,
// eos_token_id, do_sample, transformers_version, ...) is ignored, do_sample included (as vLLM
// does: temperature 0 is how a model asks for greedy decoding). Values are checked as a
// request's are (api/sampling_params_json.h); a bad one is an InvalidArgument naming the file.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/status.h"
#include "engine/sampling/sampling_params.h"

namespace deepinfer::api {

struct GenerationDefaults {
  engine::SamplingParams params;  // the engine's defaults with the file's fields applied
  std::string summary;            // "temperature 0.6, top_p 0.95"; empty when the file sets none
  std::string file;               // the file read (LoadGenerationConfig); empty from JSON
};

inline constexpr const char* kGenerationConfigFile = "generation_config.json";

StatusOr<GenerationDefaults> GenerationDefaultsFromJson(const nlohmann::json& config);

// `path`: a generation_config.json, or a folder holding one, read by io::LoadJsonFile (so a
// missing file is NotFound and every error names the file).
StatusOr<GenerationDefaults> LoadGenerationConfig(const std::string& path);

}  // namespace deepinfer::api
