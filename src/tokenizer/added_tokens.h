// Finds added tokens (special or not) in raw text before any pre-tokenization, the way the
// Hugging Face AddedVocabulary does: leftmost match first, the longest token among those that
// start there; exact bytes, no stripping of neighbouring spaces.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deepinfer::tokenizer {

class AddedTokenMatcher {
 public:
  // `tokens`: (content, id); contents must be non-empty.
  explicit AddedTokenMatcher(const std::vector<std::pair<std::string, int32_t>>& tokens);

  struct Segment {
    size_t begin, end;  // byte range in the text
    int32_t id;         // the matched token, or -1 for text between matches
  };

  // Splits text[begin, end) into matched tokens and the (non-empty) text between them, in
  // order, appending to *out.
  void Split(std::string_view text, size_t begin, size_t end, std::vector<Segment>* out) const;

  bool empty() const { return nodes_.size() <= 1; }

 private:
  // Byte trie; node 0 is the root. Children are kept sorted in a flat edge list per node.
  struct Node {
    int32_t token_id = -1;
    uint32_t first_edge = 0, n_edges = 0;
  };
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };
  int Child(uint32_t node, uint8_t byte) const;
  // Longest token starting at text[pos] (within end): its id and length, or id -1.
  std::pair<int32_t, size_t> LongestAt(std::string_view text, size_t pos, size_t end) const;

  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::array<bool, 256> can_start_{};
};

}  // namespace deepinfer::tokenizer
