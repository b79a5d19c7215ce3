#include "tokenizer/pretokenizer.h"

namespace deepinfer::tokenizer {

StatusOr<PreTokenizer> PreTokenizer::Build(const std::vector<SplitSpec>& splits) {
  PreTokenizer pt;
  for (const SplitSpec& s : splits) {
    DI_ASSIGN_OR_RETURN(Regex re, Regex::Compile(s.pattern, s.literal));
    pt.splits_.push_back(std::move(re));
  }
  return pt;
}

Status PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return Status::Ok();
  thread_local std::vector<std::string_view> current, next;
  current.assign(1, text);
  for (const Regex& re : splits_) {
    next.clear();
    for (std::string_view piece : current) {
      // `gap` starts the text not yet emitted; `search` is where the next match may start.
      // An empty match emits nothing but still cuts the gap there (the search steps one
      // character past it).
      size_t gap = 0, search = 0;
      size_t begin, end;
      while (search <= piece.size()) {
        DI_ASSIGN_OR_RETURN(bool found, re.Find(piece, search, &begin, &end));
        if (!found) break;
        if (begin > gap) next.push_back(piece.substr(gap, begin - gap));
        if (end > begin) next.push_back(piece.substr(begin, end - begin));
        gap = end;
        search = end;
        if (end == begin) {
          if (end == piece.size()) break;
          do {
            ++search;
          } while (search < piece.size() && (static_cast<uint8_t>(piece[search]) & 0xC0) == 0x80);
        }
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    current.swap(next);
  }
  pieces->insert(pieces->end(), current.begin(), current.end());
  return Status::Ok();
}

}  // namespace deepinfer::tokenizer
