#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/word_cache.h"

namespace deepinfer::tokenizer {

BpeModel::BpeModel() = default;
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

StatusOr<BpeModel> BpeModel::Build(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   const ByteLevelAlphabet& alphabet) {
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(vocab.size());
  for (const auto& [token, id] : vocab) {
    if (!ids.emplace(token, id).second) {
      return InvalidArgument("tokenizer.json: model.vocab lists \"" + token + "\" twice");
    }
  }
  BpeModel model;
  for (int b = 0; b < 256; ++b) {
    const auto it = ids.find(alphabet.Utf8(static_cast<uint8_t>(b)));
    if (it == ids.end()) {
      return InvalidArgument("tokenizer.json: model.vocab lacks the byte-level token for byte " +
                             std::to_string(b) + " (\"" + alphabet.Utf8(static_cast<uint8_t>(b)) +
                             "\")");
    }
    model.byte_ids_[b] = it->second;
  }
  model.merges_.reserve(merges.size() * 2);
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    joined = left + right;
    const auto l = ids.find(left), r = ids.find(right), j = ids.find(joined);
    if (l == ids.end() || r == ids.end() || j == ids.end()) {
      return InvalidArgument("tokenizer.json: model.merges[" + std::to_string(rank) + "] \"" +
                             left + " " + right + "\" refers to a token not in model.vocab");
    }
    // A repeated pair keeps its first (lowest) rank.
    model.merges_.try_emplace(PairKey(l->second, r->second),
                              MergeResult{static_cast<int32_t>(rank), j->second});
  }
  model.cache_ = std::make_unique<WordCache>(kCacheCapacity);
  return model;
}

const BpeModel::MergeResult* BpeModel::FindMerge(int32_t a, int32_t b) const {
  const auto it = merges_.find(PairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.size() == 1) {
    ids->push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable && cache_->Lookup(word, ids)) return;
  const size_t first = ids->size();
  EncodeWordUncached(word, ids);
  if (cacheable) cache_->Insert(word, ids->data() + first, ids->size() - first);
}

void BpeModel::EncodeWordUncached(std::string_view word, std::vector<int32_t>* ids) const {
  const int n = static_cast<int>(word.size());
  if (n == 0) return;
  // Symbols as a doubly linked list over the initial byte positions; a merge keeps the left
  // symbol (its position stays the tie-breaker) and unlinks the right one.
  std::vector<int32_t> sym(n);
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    sym[i] = byte_ids_[static_cast<uint8_t>(word[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left, right;  // the pair this candidate was computed for (stale if changed)
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    const MergeResult* m = FindMerge(sym[pos], sym[next[pos]]);
    if (m != nullptr) heap.push({m->rank, pos, sym[pos], sym[next[pos]]});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] < 0) continue;
    const int right = next[c.pos];
    if (sym[c.pos] != c.left || sym[right] != c.right) continue;
    sym[c.pos] = FindMerge(c.left, c.right)->id;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) ids->push_back(sym[i]);
}

}  // namespace deepinfer::tokenizer
