#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace deepinfer::tokenizer {

ByteLevelAlphabet::ByteLevelAlphabet() {
  byte_of_.fill(0);
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    code_points_[b] = printable ? static_cast<char32_t>(b) : next++;
    utf8_[b].clear();
    AppendUtf8(code_points_[b], &utf8_[b]);
    byte_of_[code_points_[b]] = static_cast<uint16_t>(b + 1);
  }
}

std::string ByteLevelAlphabet::Encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += utf8_[static_cast<uint8_t>(c)];
  return out;
}

std::string ByteLevelAlphabet::Decode(std::string_view token) const {
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    size_t len;
    const char32_t cp = DecodeUtf8(token.substr(pos), &len);
    if (cp >= byte_of_.size() || byte_of_[cp] == 0) return std::string(token);
    out.push_back(static_cast<char>(byte_of_[cp] - 1));
    pos += len;
  }
  return out;
}

}  // namespace deepinfer::tokenizer
