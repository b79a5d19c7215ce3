// GPT-2's byte-level alphabet: every byte maps to one printable code point, so that BPE
// vocabularies can be stored as text. Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map
// to themselves; the other 68 bytes map to U+0100, U+0101, ... in byte order (space -> 'Ġ').
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace deepinfer::tokenizer {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();

  // The code point standing for `byte`, and its UTF-8 encoding.
  char32_t CodePoint(uint8_t byte) const { return code_points_[byte]; }
  const std::string& Utf8(uint8_t byte) const { return utf8_[byte]; }

  // Byte-level string of raw bytes (each byte -> its code point in UTF-8).
  std::string Encode(std::string_view bytes) const;

  // Inverse of Encode, following the Hugging Face ByteLevel decoder: when every character of
  // `token` belongs to the alphabet, the bytes they stand for; otherwise (added tokens such as
  // "<｜begin▁of▁sentence｜>") the token's own UTF-8 bytes, unchanged. `token` must be valid UTF-8.
  std::string Decode(std::string_view token) const;

 private:
  std::array<char32_t, 256> code_points_;
  std::array<std::string, 256> utf8_;
  // code point -> byte + 1 for code points below 0x144 (the largest in the alphabet); 0 = none.
  std::array<uint16_t, 0x144> byte_of_;
};

}  // namespace deepinfer::tokenizer
