#include "structured/char_class.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "tokenizer/utf8.h"

namespace deepinfer::structured {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

// Code points whose shortest encoding has n bytes.
constexpr uint32_t kLenLo[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kLenHi[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// Partial state layout: bits 24-25 continuation bytes left, bits 21-23 total length,
// bits 0-20 the code point bits seen so far.
int32_t Pack(int left, int len, uint32_t bits) {
  return static_cast<int32_t>((left << 24) | (len << 21) | bits);
}

}  // namespace

void CharClass::AddRange(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  if (lo < kSurrogateLo && hi > kSurrogateHi) {
    ranges_.emplace_back(lo, kSurrogateLo - 1);
    ranges_.emplace_back(kSurrogateHi + 1, hi);
  } else if (lo >= kSurrogateLo && hi <= kSurrogateHi) {
    return;
  } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
    ranges_.emplace_back(kSurrogateHi + 1, hi);
  } else if (hi >= kSurrogateLo && hi <= kSurrogateHi) {
    ranges_.emplace_back(lo, kSurrogateLo - 1);
  } else {
    ranges_.emplace_back(lo, hi);
  }
  Normalize();
}

void CharClass::AddClass(const CharClass& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  Normalize();
}

void CharClass::Normalize() {
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

CharClass CharClass::Complement() const {
  CharClass out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
  // Re-add through AddRange to drop the surrogate block.
  CharClass clean;
  for (const auto& [lo, hi] : out.ranges_) clean.AddRange(lo, hi);
  return clean;
}

CharClass CharClass::Minus(const CharClass& other) const {
  CharClass keep = other.Complement();
  CharClass out;
  for (const auto& [a, b] : ranges_) {
    for (const auto& [c, d] : keep.ranges_) {
      uint32_t lo = std::max(a, c), hi = std::min(b, d);
      if (lo <= hi) out.ranges_.emplace_back(lo, hi);
    }
  }
  out.Normalize();
  return out;
}

bool CharClass::Intersects(uint32_t lo, uint32_t hi) const {
  // First range whose end is >= lo.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                             [](const auto& r, uint32_t v) { return r.second < v; });
  return it != ranges_.end() && it->first <= hi;
}

int CharClass::MinUtf8Bytes() const {
  uint32_t cp = ranges_.front().first;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

int32_t CharClass::Step(int32_t state, uint8_t byte) const {
  int left, len;
  uint32_t bits;
  if (state == 0) {
    if (byte < 0x80) return Contains(byte) ? 0 : -1;
    if (byte >= 0xC2 && byte <= 0xDF) {
      len = 2, bits = byte & 0x1F;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      len = 3, bits = byte & 0x0F;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      len = 4, bits = byte & 0x07;
    } else {
      return -1;
    }
    left = len - 1;
  } else {
    if ((byte & 0xC0) != 0x80) return -1;
    left = ((state >> 24) & 3) - 1;
    len = (state >> 21) & 7;
    bits = ((static_cast<uint32_t>(state) & 0x1FFFFF) << 6) | (byte & 0x3F);
  }
  // Every code point whose encoding starts with the bytes seen so far.
  uint32_t lo = bits << (6 * left), hi = lo | ((1u << (6 * left)) - 1);
  lo = std::max(lo, kLenLo[len]);
  hi = std::min(hi, kLenHi[len]);
  if (lo > hi || !Intersects(lo, hi)) return -1;
  return left == 0 ? 0 : Pack(left, len, bits);
}

std::string CharClass::ToEbnf() const {
  std::string out = "[";
  auto put = [&](uint32_t cp) {
    char buf[16];
    if (cp == '\\' || cp == ']' || cp == '-' || cp == '^' || cp == '[') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x100) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
      out += buf;
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
      out += buf;
    }
  };
  for (const auto& [lo, hi] : ranges_) {
    put(lo);
    if (hi != lo) {
      if (hi > lo + 1) out += '-';
      put(hi);
    }
  }
  return out + "]";
}

void AppendUtf8(uint32_t cp, std::string* out) {
  tokenizer::AppendUtf8(static_cast<char32_t>(cp), out);
}

int32_t DecodeUtf8(const std::string& s, size_t* pos) {
  std::string_view rest(s);
  rest.remove_prefix(std::min(*pos, s.size()));
  if (rest.empty() || tokenizer::InvalidUtf8PrefixLength(rest, nullptr) != 0) return -1;
  size_t n = 0;
  const char32_t cp = tokenizer::DecodeUtf8(rest, &n);
  *pos += n;
  return static_cast<int32_t>(cp);
}

}  // namespace deepinfer::structured
