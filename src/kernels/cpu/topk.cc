#include "kernels/cpu/topk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <vector>

#include "core/check.h"

namespace deepinfer::kernels {

namespace {

// A key whose unsigned order is the wanted order: the score mapped to a monotone unsigned
// integer in the high half, the complemented index in the low half (lower index = larger key).
inline uint64_t Key(float score, int64_t index) {
  uint32_t u = std::bit_cast<uint32_t>(score + 0.0f);  // -0 -> +0
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(u) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(index));
}

inline int32_t KeyIndex(uint64_t key) {
  return static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(key));
}

}  // namespace

int64_t TopK(const float* scores, int64_t n, int64_t k, int32_t* out_idx, float* out_score) {
  CHECK(n < (int64_t{1} << 31)) << "TopK: n too large: " << n;
  k = std::min(k, n);
  if (k <= 0) return 0;
  thread_local std::vector<uint64_t> heap;
  heap.clear();
  heap.reserve(static_cast<size_t>(k));
  // Min-heap of the best k keys seen so far; heap.front() is the weakest kept.
  for (int64_t i = 0; i < n; ++i) {
    CHECK(!std::isnan(scores[i])) << "TopK: NaN score at " << i;
    const uint64_t key = Key(scores[i], i);
    if (static_cast<int64_t>(heap.size()) < k) {
      heap.push_back(key);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    } else if (key > heap.front()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.back() = key;
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }
  std::sort(heap.begin(), heap.end(), std::greater<>());
  for (int64_t j = 0; j < k; ++j) {
    out_idx[j] = KeyIndex(heap[j]);
    if (out_score) out_score[j] = scores[out_idx[j]];
  }
  return k;
}

void SortIndicesAscending(int32_t* idx, int64_t n) { std::sort(idx, idx + n); }

}  // namespace deepinfer::kernels
