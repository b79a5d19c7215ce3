#include "tokenizer/bpe.h"

#include <bit>
#include <queue>
#include <unordered_map>

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
  size_t n_slots = 16;
  while (n_slots < merges.size() * 2) n_slots *= 2;
  model.merge_slots_.assign(n_slots, MergeSlot{});
  model.merge_shift_ = 64 - std::countr_zero(n_slots);
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    joined.assign(left).append(right);
    const auto l = ids.find(left), r = ids.find(right), j = ids.find(joined);
    if (l == ids.end() || r == ids.end() || j == ids.end()) {
      std::string message = "tokenizer.json: model.merges[" + std::to_string(rank) + "] \"";
      message.append(left).append(" ").append(right).append(
          "\" refers to a token not in model.vocab");
      return InvalidArgument(std::move(message));
    }
    // A repeated pair keeps its first (lowest) rank.
    const uint64_t key = PairKey(l->second, r->second);
    size_t i = (key * 0x9E3779B97F4A7C15ull) >> model.merge_shift_;
    while (model.merge_slots_[i].rank != kNoMerge && model.merge_slots_[i].key != key) {
      i = (i + 1) & (n_slots - 1);
    }
    if (model.merge_slots_[i].rank == kNoMerge) {
      model.merge_slots_[i] = {key, static_cast<int32_t>(rank), j->second};
    }
  }
  model.cache_ = std::make_unique<WordCache>(kCacheCapacity);
  return model;
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
  if (word.empty()) return;
  if (word.size() <= kSmallWord) {
    EncodeSmall(word, ids);
  } else {
    EncodeLarge(word, ids);
  }
}

void BpeModel::EncodeSmall(std::string_view word, std::vector<int32_t>* ids) const {
  // sym[i] and the merge of (sym[i], sym[i + 1]) in rank[i]/merged[i]; a merge at i replaces
  // sym[i], shifts the tail left by one and refreshes only the two pairs it touched. The lowest
  // rank wins, the leftmost among equal ranks (the strict < of the scan).
  int32_t sym[kSmallWord], rank[kSmallWord], merged[kSmallWord];
  int n = static_cast<int>(word.size());
  auto refresh = [&](int i) {
    const MergeSlot& m = FindMerge(sym[i], sym[i + 1]);
    rank[i] = m.rank;
    merged[i] = m.id;
  };
  for (int i = 0; i < n; ++i) sym[i] = byte_ids_[static_cast<uint8_t>(word[i])];
  for (int i = 0; i + 1 < n; ++i) refresh(i);
  while (n > 1) {
    int best = -1;
    int32_t best_rank = kNoMerge;
    for (int i = 0; i + 1 < n; ++i) {
      if (rank[i] < best_rank) {
        best_rank = rank[i];
        best = i;
      }
    }
    if (best < 0) break;
    sym[best] = merged[best];
    for (int i = best + 1; i + 1 < n; ++i) {
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) refresh(best - 1);
    if (best + 1 < n) refresh(best);
  }
  ids->insert(ids->end(), sym, sym + n);
}

void BpeModel::EncodeLarge(std::string_view word, std::vector<int32_t>* ids) const {
  const int n = static_cast<int>(word.size());
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
    const MergeSlot& m = FindMerge(sym[pos], sym[next[pos]]);
    if (m.rank != kNoMerge) heap.push({m.rank, pos, sym[pos], sym[next[pos]]});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] < 0) continue;
    const int right = next[c.pos];
    if (sym[c.pos] != c.left || sym[right] != c.right) continue;
    sym[c.pos] = FindMerge(c.left, c.right).id;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) ids->push_back(sym[i]);
}

}  // namespace deepinfer::tokenizer
