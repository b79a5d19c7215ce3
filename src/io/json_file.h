// Loading JSON documents (config.json, tokenizer.json, safetensors headers, shard indexes) with
// errors that name the file and the position of the problem.
//
// Stricter than plain nlohmann::json::parse in two ways that matter for checkpoints:
//   - a key repeated inside one object is an error (nlohmann would silently keep the last one,
//     so a header listing a tensor twice would lose one of them without a word);
//   - nesting deeper than kMaxJsonDepth is an error (no legitimate file of ours comes close).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace deepinfer::io {

inline constexpr int kMaxJsonDepth = 256;

struct JsonParseOptions {
  // When set, receives the keys of the top-level object in document order (nlohmann::json
  // stores objects sorted by key; the safetensors header order is the file's tensor order).
  std::vector<std::string>* top_level_keys = nullptr;
};

// Parses `text`. Errors read "<display_name>: JSON parse error at line L, column C (byte B): ..."
// or "<display_name>: duplicate key \"k\" in object at /a/b".
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view display_name,
                                   const JsonParseOptions& options = {});

// Reads and parses the file at `path`; errors name the path.
StatusOr<nlohmann::json> LoadJsonFile(const std::string& path,
                                      const JsonParseOptions& options = {});

// "line L, column C" (1-based) of byte offset `byte` in `text`; offsets past the end clamp to it.
std::string JsonPositionString(std::string_view text, size_t byte);

}  // namespace deepinfer::io
