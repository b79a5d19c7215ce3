#include "structured/vocabulary.h"

#include <algorithm>
#include <functional>

#include "tokenizer/tokenizer.h"

namespace deepinfer::structured {

StatusOr<std::shared_ptr<const Vocabulary>> Vocabulary::Create(std::vector<std::string> token_bytes,
                                                               std::vector<bool> usable,
                                                               std::vector<int32_t> stop_ids) {
  if (usable.size() != token_bytes.size()) {
    return InvalidArgument("vocabulary: usable flags and tokens differ in count");
  }
  if (token_bytes.empty()) return InvalidArgument("vocabulary: no tokens");
  auto v = std::make_shared<Vocabulary>();
  const int32_t n = static_cast<int32_t>(token_bytes.size());
  v->is_stop_.assign(n, false);
  for (int32_t id : stop_ids) {
    if (id < 0 || id >= n) {
      return InvalidArgument("vocabulary: stop id " + std::to_string(id) + " out of range");
    }
    v->is_stop_[id] = true;
  }
  for (int32_t id = 0; id < n; ++id) {
    if (token_bytes[id].empty() || v->is_stop_[id]) usable[id] = false;
    if (token_bytes[id].size() > 0xFFFF) {
      return InvalidArgument("vocabulary: token " + std::to_string(id) + " is too long");
    }
    if (usable[id]) v->sorted_.push_back(id);
  }
  v->bytes_ = std::move(token_bytes);
  v->usable_ = std::move(usable);
  v->stop_ids_ = std::move(stop_ids);
  std::sort(v->sorted_.begin(), v->sorted_.end(),
            [&](int32_t a, int32_t b) { return v->bytes_[a] < v->bytes_[b]; });
  v->lcp_.assign(v->sorted_.size(), 0);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < v->sorted_.size(); ++i) {
    const std::string& cur = v->bytes_[v->sorted_[i]];
    v->max_len_ = std::max(v->max_len_, cur.size());
    if (i > 0) {
      v->lcp_[i] = static_cast<uint16_t>(CommonPrefixLength(v->bytes_[v->sorted_[i - 1]], cur));
    }
  }
  // The contiguous copy: sorted usable ids first, then the rest in id order.
  std::vector<bool> placed(static_cast<size_t>(n), false);
  v->spans_.assign(static_cast<size_t>(n), Span{0, 0});
  auto place = [&](int32_t id) {
    const std::string& b = v->bytes_[static_cast<size_t>(id)];
    v->spans_[static_cast<size_t>(id)] = {static_cast<uint32_t>(v->blob_.size()),
                                          static_cast<uint32_t>(b.size())};
    v->blob_ += b;
    placed[static_cast<size_t>(id)] = true;
  };
  size_t total = 0;
  for (const std::string& b : v->bytes_) total += b.size();
  if (total > 0xFFFFFFFFu) return InvalidArgument("vocabulary: token bytes exceed 4 GiB");
  v->blob_.reserve(total);
  for (int32_t id : v->sorted_) {
    v->sorted_offsets_.push_back(static_cast<uint32_t>(v->blob_.size()));
    place(id);
  }
  v->sorted_offsets_.push_back(static_cast<uint32_t>(v->blob_.size()));
  v->all_ranks_.resize(v->sorted_.size());
  v->rank_of_.assign(static_cast<size_t>(n), -1);
  for (size_t r = 0; r < v->all_ranks_.size(); ++r) {
    v->all_ranks_[r] = static_cast<int32_t>(r);
    v->rank_of_[static_cast<size_t>(v->sorted_[r])] = static_cast<int32_t>(r);
  }
  for (int32_t id = 0; id < n; ++id) {
    if (!placed[static_cast<size_t>(id)]) place(id);
  }
  for (int32_t id = 0; id < n; ++id) {
    h = (h ^ std::hash<std::string>()(v->bytes_[id])) * 1099511628211ull;
    h = (h ^ (v->usable_[id] ? 1 : 0) ^ (v->is_stop_[id] ? 2 : 0)) * 1099511628211ull;
  }
  v->fingerprint_ = h;
  return std::shared_ptr<const Vocabulary>(std::move(v));
}

StatusOr<std::shared_ptr<const Vocabulary>> Vocabulary::FromTokenizer(
    const tokenizer::Tokenizer& tok, int32_t vocab_size) {
  const int32_t n_ids = tok.n_ids();
  if (vocab_size == 0) vocab_size = n_ids;
  if (vocab_size < n_ids) {
    return InvalidArgument("vocabulary: vocab_size " + std::to_string(vocab_size) +
                           " below the tokenizer's " + std::to_string(n_ids) + " ids");
  }
  std::vector<std::string> bytes(vocab_size);
  std::vector<bool> usable(vocab_size, false);
  for (int32_t id = 0; id < n_ids; ++id) {
    if (!tok.HasId(id)) continue;
    bytes[id] = tok.TokenBytes(id);
    auto added = tok.AddedTokenId(tok.TokenString(id));
    const bool is_added = added.ok() && *added == id;
    usable[id] = !tok.IsSpecial(id) && !is_added;
  }
  std::vector<int32_t> stops;
  if (tok.eos_id()) stops.push_back(*tok.eos_id());
  return Create(std::move(bytes), std::move(usable), std::move(stops));
}

}  // namespace deepinfer::structured
