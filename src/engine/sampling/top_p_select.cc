#include "engine/sampling/top_p_select.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace deepinfer::engine {
namespace {

// Radix levels over the bit pattern of a non-negative float (monotone in its value): bits 31..21,
// 20..10 and 9..0.
constexpr int kShift[3] = {21, 10, 0};
constexpr uint32_t kMask[3] = {0x7FF, 0x7FF, 0x3FF};
constexpr int kBuckets = 2048;

inline uint32_t Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return u;
}

inline float FromBits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof(v));
  return v;
}

}  // namespace

float TopPThreshold(float* vals, int64_t n, double target, float* scratch) {
  CHECK(n >= 1 && target > 0.0) << "n = " << n << ", target = " << target;
  float* cur = vals;
  double mass[kBuckets];
  for (int level = 0; level < 3; ++level) {
    const int shift = kShift[level];
    const uint32_t mask = kMask[level];
    std::fill(mass, mass + mask + 1, 0.0);
    for (int64_t i = 0; i < n; ++i) mass[(Bits(cur[i]) >> shift) & mask] += cur[i];
    // The bucket where the mass counted from the top first reaches the target.
    double above = 0.0;
    int64_t chosen = -1;
    for (int64_t b = mask; b >= 0; --b) {
      if (above + mass[b] >= target) {
        chosen = b;
        break;
      }
      above += mass[b];
    }
    if (chosen < 0) {  // rounding left the whole set short: keep all of it
      return *std::min_element(cur, cur + n);
    }
    target -= above;
    // Keep the chosen bucket's values (branch-free compaction into scratch; vals is free to
    // reuse once cur has moved off it, so the two buffers alternate).
    float* dst = cur == scratch ? vals : scratch;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
      dst[m] = cur[i];
      m += ((Bits(cur[i]) >> shift) & mask) == static_cast<uint32_t>(chosen);
    }
    cur = dst;
    n = m;
    if (n <= 32) break;  // small enough to sort
  }
  // Every value left is in the boundary bucket; the answer is the largest v with enough mass.
  // (After the last level they are all equal.)
  std::sort(cur, cur + n, [](float a, float b) { return a > b; });
  double cum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    cum += cur[i];
    if (cum >= target) return cur[i];
  }
  return cur[n - 1];
}

}  // namespace deepinfer::engine
