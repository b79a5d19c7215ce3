#include "engine/sampling/token_history.h"

#include "core/check.h"

namespace deepinfer::engine {
namespace {

void Decrement(std::unordered_map<int32_t, int32_t>* counts, int32_t token) {
  auto it = counts->find(token);
  CHECK(it != counts->end() && it->second > 0) << "token " << token << " not counted";
  if (--it->second == 0) counts->erase(it);
}

}  // namespace

void TokenHistory::AddPrompt(std::span<const int32_t> tokens) {
  CHECK_EQ(n_generated_, 0) << "prompt tokens after generated ones";
  for (int32_t t : tokens) ++seen_counts_[t];
}

void TokenHistory::Append(int32_t token) {
  ++n_generated_;
  ++generated_counts_[token];
  ++seen_counts_[token];
}

void TokenHistory::Rollback(std::span<const int32_t> dropped) {
  const auto n = static_cast<int64_t>(dropped.size());
  CHECK(n <= n_generated_) << "rollback of " << n << " of " << n_generated_;
  for (int32_t token : dropped) {
    Decrement(&generated_counts_, token);
    Decrement(&seen_counts_, token);
  }
  n_generated_ -= n;
}

int32_t TokenHistory::GeneratedCount(int32_t token) const {
  const auto it = generated_counts_.find(token);
  return it == generated_counts_.end() ? 0 : it->second;
}

bool TokenHistory::Seen(int32_t token) const { return seen_counts_.contains(token); }

}  // namespace deepinfer::engine
