// The tokenizer facade: byte-level BPE loaded from a Hugging Face tokenizer directory
// (tokenizer.json + optional tokenizer_config.json), bit-compatible with the Hugging Face
// `tokenizers` library for the DeepSeek family.
//
// Encode: invalid UTF-8 is rejected; added tokens (special or not) are cut out of the raw text
// first (raw-text tokens, then "normalized" ones in the remaining gaps); the rest is
// pre-tokenized (regex splits) and each piece goes through BPE. BOS/EOS are added only when asked
// (add_special_tokens) and only as tokenizer_config.json says (add_bos_token/add_eos_token).
// Decode: the bytes of all kept tokens are joined, then converted to text with the lossy
// UTF-8 rule (one U+FFFD per maximal invalid subsequence).
//
// All methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_spec.h"

namespace deepinfer::tokenizer {

class Tokenizer {
 public:
  // Loads DIR/tokenizer.json (+ DIR/tokenizer_config.json when present).
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& dir);
  static StatusOr<std::unique_ptr<Tokenizer>> FromSpec(const TokenizerSpec& spec);

  StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                        bool add_special_tokens = false) const;
  // Appends to *ids instead of returning a vector (no BOS/EOS).
  Status EncodeAppend(std::string_view text, std::vector<int32_t>* ids) const;

  // Errors on an id outside [0, n_ids()) or one no token has.
  StatusOr<std::string> Decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // Number of ids (largest id + 1); every id below has a token unless the file left gaps.
  int32_t n_ids() const { return static_cast<int32_t>(tokens_.size()); }
  bool HasId(int32_t id) const { return id >= 0 && id < n_ids() && tokens_[id].present; }
  bool IsSpecial(int32_t id) const { return HasId(id) && tokens_[id].special; }
  // The token's string as stored (byte-level characters for vocab tokens, the content for added
  // tokens) and the raw bytes it contributes to decoded text. Precondition: HasId(id).
  const std::string& TokenString(int32_t id) const { return tokens_[id].text; }
  const std::string& TokenBytes(int32_t id) const { return tokens_[id].bytes; }

  // The id of an added (special or not) token by its exact content; NotFound otherwise.
  StatusOr<int32_t> AddedTokenId(std::string_view content) const;

  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  bool add_bos_token() const { return add_bos_; }
  bool add_eos_token() const { return add_eos_; }

 private:
  struct Token {
    std::string text, bytes;
    bool present = false, special = false;
  };
  Tokenizer(ByteLevelAlphabet alphabet, BpeModel bpe, PreTokenizer pre,
            AddedTokenMatcher raw_matcher, AddedTokenMatcher normalized_matcher);
  Status EncodeOrdinary(std::string_view text, std::vector<int32_t>* ids) const;

  ByteLevelAlphabet alphabet_;
  BpeModel bpe_;
  PreTokenizer pre_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::vector<Token> tokens_;
  std::unordered_map<std::string, int32_t> added_ids_;
  std::optional<int32_t> bos_id_, eos_id_;
  bool add_bos_ = false, add_eos_ = false;
};

}  // namespace deepinfer::tokenizer
