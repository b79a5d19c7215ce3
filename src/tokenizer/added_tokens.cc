#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <map>

namespace deepinfer::tokenizer {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::pair<std::string, int32_t>>& tokens) {
  // Build with std::map children, then flatten into sorted edge arrays.
  struct BuildNode {
    int32_t token_id = -1;
    std::map<uint8_t, uint32_t> children;
  };
  std::vector<BuildNode> build(1);
  for (const auto& [content, id] : tokens) {
    uint32_t node = 0;
    for (char c : content) {
      const auto b = static_cast<uint8_t>(c);
      auto it = build[node].children.find(b);
      if (it == build[node].children.end()) {
        build.emplace_back();
        it = build[node].children.emplace(b, static_cast<uint32_t>(build.size() - 1)).first;
      }
      node = it->second;
    }
    if (build[node].token_id < 0) build[node].token_id = id;  // first definition wins
    can_start_[static_cast<uint8_t>(content[0])] = true;
  }
  nodes_.resize(build.size());
  for (size_t i = 0; i < build.size(); ++i) {
    nodes_[i].token_id = build[i].token_id;
    nodes_[i].first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[i].n_edges = static_cast<uint32_t>(build[i].children.size());
    for (const auto& [b, child] : build[i].children) edges_.push_back({b, child});
  }
}

int AddedTokenMatcher::Child(uint32_t node, uint8_t byte) const {
  const Edge* begin = edges_.data() + nodes_[node].first_edge;
  const Edge* end = begin + nodes_[node].n_edges;
  const Edge* it =
      std::lower_bound(begin, end, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
  return (it != end && it->byte == byte) ? static_cast<int>(it->child) : -1;
}

std::pair<int32_t, size_t> AddedTokenMatcher::LongestAt(std::string_view text, size_t pos,
                                                        size_t end) const {
  int32_t best_id = -1;
  size_t best_len = 0;
  uint32_t node = 0;
  for (size_t i = pos; i < end; ++i) {
    const int child = Child(node, static_cast<uint8_t>(text[i]));
    if (child < 0) break;
    node = static_cast<uint32_t>(child);
    if (nodes_[node].token_id >= 0) {
      best_id = nodes_[node].token_id;
      best_len = i + 1 - pos;
    }
  }
  return {best_id, best_len};
}

void AddedTokenMatcher::Split(std::string_view text, size_t begin, size_t end,
                              std::vector<Segment>* out) const {
  size_t gap_start = begin;
  size_t pos = begin;
  while (pos < end) {
    if (!can_start_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [id, len] = LongestAt(text, pos, end);
    if (id < 0) {
      ++pos;
      continue;
    }
    if (pos > gap_start) out->push_back({gap_start, pos, -1});
    out->push_back({pos, pos + len, id});
    pos += len;
    gap_start = pos;
  }
  if (end > gap_start) out->push_back({gap_start, end, -1});
}

}  // namespace deepinfer::tokenizer
