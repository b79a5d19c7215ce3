// EngramTokenMap: the compressed-token lookup of the Engram n-gram hash.
//
// The official code builds it from the tokenizer (token ids whose decoded text normalizes alike
// share one compressed id, see engram.py build_compressed_token_map); a checkpoint folder may
// instead carry it precomputed as `engram_token_map.json`:
//   {"compressed_vocab_size": N, "map": [c_0, c_1, ..., c_{V-1}]}
// Either source fills the struct (core/engram_token_map.h); ValidateEngramTokenMap is the one gate
// both pass through before the hasher (engram_hash.h) may use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engram_token_map.h"
#include "core/status.h"
#include "model/deepseek_v41/config.h"
#include "nlohmann/json_fwd.hpp"

namespace deepinfer::model {

// OK iff N == config.engram_compressed_vocab_size (every hash multiplier derives from N, so a
// mismatch would silently rehash the table), map.size() == config.vocab_size, and every entry
// lies in [0, N). The message names the first offending field or entry.
Status ValidateEngramTokenMap(const EngramTokenMap& token_map, const ModelConfig& config);

// Parses the JSON form and validates it against `config`. `display_name` prefixes errors.
StatusOr<EngramTokenMap> ParseEngramTokenMap(const nlohmann::json& json, const ModelConfig& config,
                                             const std::string& display_name);
// Reads and parses the file at `path` (errors name the path).
StatusOr<EngramTokenMap> LoadEngramTokenMap(const std::string& path, const ModelConfig& config);

}  // namespace deepinfer::model
