// What a Hugging Face tokenizer directory says, parsed and validated but not yet compiled:
// tokenizer.json (model vocab and merges, added tokens, normalizer, pre-tokenizer) and the
// optional tokenizer_config.json (BOS/EOS policy). Only the byte-level BPE family is accepted;
// anything else is an Unimplemented error naming the unsupported field, never a silent mismatch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer::tokenizer {

struct AddedTokenSpec {
  int32_t id = 0;
  std::string content;
  bool special = false;
  // Matched against normalized text (true) or raw text (false); with an empty normalizer the
  // two passes see the same text, but their order still matters (raw-text tokens first).
  bool normalized = false;
};

// One "Split" pre-tokenizer step with behaviour "Isolated": matches and the gaps between them
// both become pieces.
struct SplitSpec {
  std::string pattern;
  bool literal = false;  // {"String": ...} rather than {"Regex": ...}
};

struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;       // model vocab, byte-level strings
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<SplitSpec> splits;  // applied in order; then the byte-level mapping
  // From tokenizer_config.json (absent file: no BOS/EOS added).
  bool add_bos_token = false;
  bool add_eos_token = false;
  std::string bos_token;  // content; empty when the config names none
  std::string eos_token;
};

// Parses tokenizer.json text; `name` prefixes error messages.
StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view text, std::string_view name);

// Adds the BOS/EOS policy of tokenizer_config.json text to *spec.
Status ParseTokenizerConfig(std::string_view text, std::string_view name, TokenizerSpec* spec);

// Reads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json.
StatusOr<TokenizerSpec> LoadTokenizerSpec(const std::string& dir);

}  // namespace deepinfer::tokenizer
