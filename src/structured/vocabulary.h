// The token vocabulary as the grammar matcher sees it: each id's bytes, which ids may ever be
// produced under a grammar, and the stop ids (EOS) that end a constrained generation.
//
// Ids that are special or added tokens (chat markers, <think>, tool-call markers) are never
// allowed by a grammar mask; stop ids are allowed exactly when the grammar can end. The usable
// tokens are also kept sorted by their bytes with the common-prefix length of neighbours, so
// that a walk over the vocabulary shares the work of common prefixes (a trie walked in order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace deepinfer::tokenizer {
class Tokenizer;
}

namespace deepinfer::structured {

// The length of the longest common prefix of a and b (the sorted vocabulary's neighbour lcp, and
// the same over any rank-ordered subset of it).
inline size_t CommonPrefixLength(std::string_view a, std::string_view b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return k;
}

class Vocabulary {
 public:
  // token_bytes[id]: the bytes of id; usable[id]: whether a grammar may ever allow it (an empty
  // token is never usable). stop_ids: ids that end the generation (all below token_bytes.size()).
  static StatusOr<std::shared_ptr<const Vocabulary>> Create(std::vector<std::string> token_bytes,
                                                            std::vector<bool> usable,
                                                            std::vector<int32_t> stop_ids);
  // From the tokenizer: every special or added token is unusable, EOS is the stop id.
  // vocab_size (0: the tokenizer's id count) sets the mask width, e.g. the model's 129,280 rows;
  // ids without a token are never allowed.
  static StatusOr<std::shared_ptr<const Vocabulary>> FromTokenizer(const tokenizer::Tokenizer& tok,
                                                                   int32_t vocab_size = 0);

  // Mask width in tokens and in 32-bit words.
  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  int32_t n_words() const { return (size() + 31) / 32; }
  const std::string& bytes(int32_t id) const { return bytes_[id]; }
  // The same bytes from one contiguous copy laid out in byte order (usable ids first).
  std::string_view view(int32_t id) const {
    const Span s = spans_[static_cast<size_t>(id)];
    return {blob_.data() + s.offset, s.length};
  }
  // The bytes of sorted_ids()[rank]: vocabulary walks go by rank and read the copy front to back
  // (a heap string or a span per id costs a cache miss per token).
  std::string_view sorted_view(int32_t rank) const {
    const auto r = static_cast<size_t>(rank);
    return {blob_.data() + sorted_offsets_[r], sorted_offsets_[r + 1] - sorted_offsets_[r]};
  }
  // The rank of a usable id in sorted_ids(), -1 for an unusable one.
  int32_t rank_of(int32_t id) const { return rank_of_[static_cast<size_t>(id)]; }
  // 0, 1, ..., sorted_ids().size() - 1: every rank, for a walk over the whole vocabulary.
  const std::vector<int32_t>& all_ranks() const { return all_ranks_; }
  bool usable(int32_t id) const { return usable_[id]; }
  bool IsStop(int32_t id) const { return is_stop_[id]; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  // Usable ids in byte order; lcp[i]: common prefix length of sorted[i-1] and sorted[i] (0 at i=0).
  const std::vector<int32_t>& sorted_ids() const { return sorted_; }
  const std::vector<uint16_t>& sorted_lcp() const { return lcp_; }
  size_t max_token_bytes() const { return max_len_; }
  // Identifies the vocabulary in compiled-grammar cache keys.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  struct Span {
    uint32_t offset, length;
  };
  std::vector<std::string> bytes_;
  std::string blob_;
  std::vector<Span> spans_;
  std::vector<uint32_t> sorted_offsets_;  // [rank], one past the end: sorted ids' bytes in blob_
  std::vector<int32_t> all_ranks_, rank_of_;
  std::vector<bool> usable_, is_stop_;
  std::vector<int32_t> stop_ids_, sorted_;
  std::vector<uint16_t> lcp_;
  size_t max_len_ = 0;
  uint64_t fingerprint_ = 0;
};

}  // namespace deepinfer::structured
