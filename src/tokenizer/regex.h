// A compiled PCRE2 pattern (UTF + Unicode properties, JIT-compiled when the library has a JIT),
// with the Oniguruma-compatible meaning of \s and \S that Hugging Face tokenizer.json patterns
// assume: exactly the Unicode White_Space characters. (PCRE2 10.42's \s also matches U+180E.)
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace deepinfer::tokenizer {

class Regex {
 public:
  // `literal`: match `pattern` as a plain string (tokenizer.json's {"String": ...} patterns).
  static StatusOr<Regex> Compile(std::string_view pattern, bool literal = false);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Finds the leftmost match in subject[start..] (the whole of `subject` is the match subject,
  // so lookarounds see its ends as string ends). Returns false when there is none; otherwise the
  // match is subject[*begin, *end). `subject` must be valid UTF-8 (not re-checked here). An
  // error only when PCRE2 gives up (match or depth limit on pathological input).
  StatusOr<bool> Find(std::string_view subject, size_t start, size_t* begin, size_t* end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex();
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

// Rewrites \s and \S (outside and inside character classes) to explicit White_Space classes.
// \S inside a character class has no such rewrite and is an error.
StatusOr<std::string> TranslateWhitespaceEscapes(std::string_view pattern);

}  // namespace deepinfer::tokenizer
