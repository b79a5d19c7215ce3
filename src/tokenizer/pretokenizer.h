// The pre-tokenizer: a sequence of regex splits with "Isolated" behaviour. Each split runs over
// every piece the previous one produced (each piece is its own match subject, so lookarounds stop
// at piece ends); matches and the gaps between them become the new pieces; empty pieces vanish.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer_spec.h"

namespace deepinfer::tokenizer {

class PreTokenizer {
 public:
  static StatusOr<PreTokenizer> Build(const std::vector<SplitSpec>& splits);

  // Appends the pieces of `text` (valid UTF-8) in order, as views into `text`.
  Status Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  std::vector<Regex> splits_;
};

}  // namespace deepinfer::tokenizer
