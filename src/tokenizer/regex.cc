#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace deepinfer::tokenizer {
namespace {

// Unicode White_Space (stable since Unicode 6.3), as PCRE2 class items.
constexpr std::string_view kWhiteSpaceItems =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

// One reusable match-data block per thread (two capture slots are all Find needs).
pcre2_match_data* ThreadMatchData() {
  struct Holder {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(data); }
  };
  thread_local Holder holder;
  return holder.data;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

StatusOr<std::string> TranslateWhitespaceEscapes(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpaceItems;
        } else {
          out += "[";
          out += kWhiteSpaceItems;
          out += "]";
        }
      } else if (e == 'S') {
        if (in_class)
          return InvalidArgument("regex: \\S inside a character class is not supported");
        out += "[^";
        out += kWhiteSpaceItems;
        out += "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' (or '^]') right after the opening bracket is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

StatusOr<Regex> Regex::Compile(std::string_view pattern, bool literal) {
  std::string translated(pattern);
  if (!literal) {
    DI_ASSIGN_OR_RETURN(translated, TranslateWhitespaceEscapes(pattern));
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(), options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidArgument("regex \"" + std::string(pattern) +
                           "\": " + reinterpret_cast<const char*>(message) + " at offset " +
                           std::to_string(offset));
  }
  Regex regex;
  regex.pattern_ = std::string(pattern);
  regex.code_ = std::make_unique<Code>();
  regex.code_->code = code;
  // JIT is an optimisation only: a library built without it still matches (interpreted).
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return regex;
}

StatusOr<bool> Regex::Find(std::string_view subject, size_t start, size_t* begin,
                           size_t* end) const {
  pcre2_match_data* md = ThreadMatchData();
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(subject.data()),
                             subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    return Status(StatusCode::kResourceExhausted,
                  "regex \"" + pattern_ + "\": " + reinterpret_cast<const char*>(message));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  *begin = ov[0];
  *end = ov[1];
  return true;
}

}  // namespace deepinfer::tokenizer
