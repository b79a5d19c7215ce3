#include "tokenizer/utf8.h"

namespace deepinfer::tokenizer {
namespace {

// Classifies the sequence at bytes[0]. Returns its length when it is a complete valid character;
// otherwise 0 and sets *subpart to the maximal subpart length (>= 1) and *incomplete when that
// subpart reaches the end of the input. The second-byte ranges follow the Unicode table of
// well-formed byte sequences (Table 3-7), which is what excludes overlongs and surrogates.
size_t Classify(std::string_view bytes, size_t* subpart, bool* incomplete) {
  const auto b0 = static_cast<uint8_t>(bytes[0]);
  *incomplete = false;
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *subpart = 1;
    return 0;
  }
  size_t i = 1;
  for (; i < need; ++i) {
    if (i >= bytes.size()) {
      *subpart = i;
      *incomplete = true;
      return 0;
    }
    const auto b = static_cast<uint8_t>(bytes[i]);
    const uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      *subpart = i;
      return 0;
    }
  }
  return need;
}

}  // namespace

Status ValidateUtf8(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t subpart;
    bool incomplete;
    const size_t n = Classify(bytes.substr(pos), &subpart, &incomplete);
    if (n == 0) {
      return InvalidArgument("invalid UTF-8 at byte " + std::to_string(pos) +
                             (incomplete ? " (truncated sequence at end of input)" : ""));
    }
    pos += n;
  }
  return Status::Ok();
}

size_t ValidUtf8PrefixLength(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t subpart;
    bool incomplete;
    const size_t n = Classify(bytes.substr(pos), &subpart, &incomplete);
    if (n == 0) break;
    pos += n;
  }
  return pos;
}

size_t InvalidUtf8PrefixLength(std::string_view bytes, bool* incomplete) {
  size_t subpart = 0;
  bool inc = false;
  const size_t n = Classify(bytes, &subpart, &inc);
  if (incomplete != nullptr) *incomplete = inc;
  return n == 0 ? subpart : 0;
}

void AppendLossyUtf8(std::string_view bytes, std::string* out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t subpart;
    bool incomplete;
    const size_t n = Classify(bytes.substr(pos), &subpart, &incomplete);
    if (n != 0) {
      out->append(bytes.substr(pos, n));
      pos += n;
    } else {
      out->append("\xEF\xBF\xBD");
      pos += subpart;
    }
  }
}

char32_t DecodeUtf8(std::string_view bytes, size_t* length) {
  const auto b0 = static_cast<uint8_t>(bytes[0]);
  auto cont = [&](size_t i) {
    return static_cast<char32_t>(static_cast<uint8_t>(bytes[i]) & 0x3F);
  };
  if (b0 < 0x80) {
    *length = 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *length = 2;
    return (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1);
  }
  if (b0 < 0xF0) {
    *length = 3;
    return (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
  }
  *length = 4;
  return (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace deepinfer::tokenizer
