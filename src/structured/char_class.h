// A set of Unicode scalar values (code points, surrogates excluded) and the byte-level UTF-8
// matching the grammar matcher runs on it.
//
// Grammars match bytes, but character classes are sets of characters. Stepping a class one byte at
// a time keeps a partial code point (the bits seen so far and how many continuation bytes are
// left); a byte is accepted only when some complete, valid UTF-8 encoding that starts with the
// bytes seen so far encodes a member of the class. So a partial character never leads to a dead
// end, and overlong forms and surrogates are never accepted.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deepinfer::structured {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class CharClass {
 public:
  CharClass() = default;
  // [lo, hi] inclusive; surrogates are dropped, overlapping ranges merged.
  void AddRange(uint32_t lo, uint32_t hi);
  void Add(uint32_t cp) { AddRange(cp, cp); }
  void AddClass(const CharClass& other);
  // Every scalar value not in the set.
  CharClass Complement() const;
  CharClass Minus(const CharClass& other) const;

  bool empty() const { return ranges_.empty(); }
  bool Contains(uint32_t cp) const { return Intersects(cp, cp); }
  // Whether some member lies in [lo, hi].
  bool Intersects(uint32_t lo, uint32_t hi) const;
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }
  // Bytes in the shortest UTF-8 encoding of any member (1..4); precondition: !empty().
  int MinUtf8Bytes() const;
  // EBNF text `[...]` of the set (escaped so that ParseEbnf reads it back).
  std::string ToEbnf() const;

  // Byte-level matching. `state` 0 means "at a character boundary"; otherwise it encodes the
  // partial character. Returns -1 when the byte is refused, 0 when the byte completed a member,
  // and a new non-zero partial state otherwise.
  int32_t Step(int32_t state, uint8_t byte) const;
  // Continuation bytes still owed by a partial state (0 at a boundary).
  static int PendingBytes(int32_t state) { return state == 0 ? 0 : (state >> 24) & 3; }

 private:
  void Normalize();
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // sorted, disjoint, non-adjacent
};

// Appends the UTF-8 encoding of `cp` to *out (tokenizer/utf8.h does the work).
void AppendUtf8(uint32_t cp, std::string* out);
// Decodes one code point at s[*pos], advancing *pos; -1 on invalid UTF-8.
int32_t DecodeUtf8(const std::string& s, size_t* pos);

}  // namespace deepinfer::structured
