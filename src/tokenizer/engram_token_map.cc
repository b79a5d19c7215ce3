#include "tokenizer/engram_token_map.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <unordered_map>

#include "tokenizer/utf8.h"

namespace deepinfer::tokenizer {
namespace {

bool IsMark(UChar32 c) {
  const int8_t type = u_charType(c);
  return type == U_NON_SPACING_MARK || type == U_COMBINING_SPACING_MARK || type == U_ENCLOSING_MARK;
}

// Collapses runs of [ \t\r\n] to one space, then strips White_Space at both ends unless the
// collapsed string is exactly " ".
std::string CollapseAndStrip(const std::string& s) {
  std::string collapsed;
  collapsed.reserve(s.size());
  bool in_run = false;
  for (const char c : s) {
    const bool ws = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (!ws) {
      collapsed.push_back(c);
    } else if (!in_run) {
      collapsed.push_back(' ');
    }
    in_run = ws;
  }
  if (collapsed == " ") return collapsed;
  // Strip: find the first and last code points that are not White_Space.
  size_t begin = 0, end = collapsed.size();
  while (begin < end) {
    size_t len;
    if (!u_isUWhiteSpace(static_cast<UChar32>(DecodeUtf8(collapsed.substr(begin), &len)))) break;
    begin += len;
  }
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(collapsed[start]) & 0xC0) == 0x80) --start;
    size_t len;
    if (!u_isUWhiteSpace(static_cast<UChar32>(DecodeUtf8(collapsed.substr(start), &len)))) break;
    end = start;
  }
  return collapsed.substr(begin, end - begin);
}

}  // namespace

StatusOr<std::string> NormalizeForEngram(std::string_view text) {
  DI_RETURN_IF_ERROR(ValidateUtf8(text));
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status)) return Internal(std::string("ICU normalizers: ") + u_errorName(status));
  const icu::UnicodeString input = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString composed = nfkc->normalize(input, status);
  icu::UnicodeString decomposed = nfd->normalize(composed, status);
  if (U_FAILURE(status)) return Internal(std::string("ICU normalize: ") + u_errorName(status));
  icu::UnicodeString stripped;
  for (int32_t i = 0; i < decomposed.length();) {
    const UChar32 c = decomposed.char32At(i);
    if (!IsMark(c)) stripped.append(c);
    i += U16_LENGTH(c);
  }
  stripped.toLower(icu::Locale::getRoot());
  std::string utf8;
  stripped.toUTF8String(utf8);
  return CollapseAndStrip(utf8);
}

StatusOr<EngramTokenMap> BuildEngramTokenMap(const Tokenizer& tokenizer) {
  EngramTokenMap out;
  out.map.resize(tokenizer.n_ids());
  std::unordered_map<std::string, int32_t> ids_of_keys;
  ids_of_keys.reserve(tokenizer.n_ids());
  for (int32_t id = 0; id < tokenizer.n_ids(); ++id) {
    if (!tokenizer.HasId(id)) {
      return InvalidArgument("Engram token map: the tokenizer has no token for id " +
                             std::to_string(id));
    }
    const int32_t one[1] = {id};
    DI_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(one, /*skip_special_tokens=*/false));
    std::string key;
    if (text.find("\xEF\xBF\xBD") != std::string::npos) {
      key = tokenizer.TokenString(id);
    } else {
      DI_ASSIGN_OR_RETURN(key, NormalizeForEngram(text));
      if (key.empty()) key = std::move(text);
    }
    const auto [it, inserted] = ids_of_keys.try_emplace(std::move(key), out.compressed_vocab_size);
    if (inserted) ++out.compressed_vocab_size;
    out.map[id] = it->second;
  }
  return out;
}

}  // namespace deepinfer::tokenizer
