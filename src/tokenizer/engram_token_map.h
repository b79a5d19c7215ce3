// The Engram compressed-token map: token ids whose text is equal after a loose normalization
// share one compressed id (the official inference/engram.py `build_compressed_token_map`).
//
// For every id in order: decode it alone (special tokens kept). If the text contains U+FFFD (a
// lone byte of a multi-byte character) the key is the raw token string. Otherwise the key is
// NormalizeForEngram(text), or the text itself when that is empty. Keys get consecutive
// compressed ids in order of first appearance; both kinds of key share one dictionary. The result
// is the plain struct of core/engram_token_map.h that the model's Engram hash reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/engram_token_map.h"
#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::tokenizer {

// NFKC -> NFD -> drop every mark (general category Mn, Mc, Me) -> full Unicode lowercase ->
// each run of [ \t\r\n] becomes one space -> strip White_Space at both ends, except that a
// string that is exactly one space stays one space. `text` must be valid UTF-8.
StatusOr<std::string> NormalizeForEngram(std::string_view text);

StatusOr<EngramTokenMap> BuildEngramTokenMap(const Tokenizer& tokenizer);

}  // namespace deepinfer::tokenizer
