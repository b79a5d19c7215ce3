// AVX-512 indexer scoring: heads across lanes (16 per zmm group), keys in tiles of 12 so that 12
// independent VDPBF16PS chains hide the instruction latency. The per-(head, key) dot runs over
// head_dim pairs in ascending order, exactly as DotBf16PairOrder, so the result equals
// IndexScoreRef bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/index_score.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
// The optimize pragma makes GCC 12 flag the intrinsics' internal self-initialised placeholders.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

constexpr int kKeyTile = 12;
constexpr int64_t kKeyChunk = 512;  // keys per parallel work item

struct RowPack {
  int groups = 0;
  int pairs = 0;
  std::vector<uint32_t> qt;  // [groups][pairs][16] bf16 pairs (q[2i], q[2i+1]), zero padded
  std::vector<float> w;      // [groups][16] head weights as fp32, zero padded
};

void PackRow(const IndexScoreParams& p, int64_t r, RowPack* pack) {
  pack->groups = (p.n_heads + 15) / 16;
  pack->pairs = p.head_dim / 2;
  pack->qt.assign(static_cast<size_t>(pack->groups) * pack->pairs * 16, 0u);
  pack->w.assign(static_cast<size_t>(pack->groups) * 16, 0.0f);
  const uint16_t* q = p.q + r * p.q_row_stride;
  const uint16_t* w = p.w + r * p.w_row_stride;
  for (int h = 0; h < p.n_heads; ++h) {
    const int g = h / 16, l = h % 16;
    uint32_t* dst = pack->qt.data() + static_cast<size_t>(g) * pack->pairs * 16 + l;
    for (int i = 0; i < pack->pairs; ++i) {
      uint32_t pair;
      std::memcpy(&pair, q + h * p.head_dim + 2 * i, 4);
      dst[i * 16] = pair;
    }
    pack->w[g * 16 + l] = Bf16ToFloat(w[h]);
  }
}

inline float FoldLanes(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <int KT>
void ScoreTile(const RowPack& pack, const uint16_t* const* keys, float* out) {
  __m512 sum[KT];
  for (int j = 0; j < KT; ++j) sum[j] = _mm512_setzero_ps();
  for (int g = 0; g < pack.groups; ++g) {
    const uint32_t* qt = pack.qt.data() + static_cast<size_t>(g) * pack.pairs * 16;
    __m512 acc[KT];
    for (int j = 0; j < KT; ++j) acc[j] = _mm512_setzero_ps();
    for (int i = 0; i < pack.pairs; ++i) {
      const __m512bh qv = (__m512bh)_mm512_loadu_si512(qt + i * 16);
      for (int j = 0; j < KT; ++j) {
        int32_t kp;
        std::memcpy(&kp, keys[j] + 2 * i, 4);
        acc[j] = _mm512_dpbf16_ps(acc[j], qv, (__m512bh)_mm512_set1_epi32(kp));
      }
    }
    const __m512 wv = _mm512_loadu_ps(pack.w.data() + g * 16);
    for (int j = 0; j < KT; ++j) {
      const __m512 relu = _mm512_max_ps(RoundToBf16x16(acc[j]), _mm512_setzero_ps());
      sum[j] = _mm512_add_ps(sum[j], RoundToBf16x16(_mm512_mul_ps(relu, wv)));
    }
  }
  for (int j = 0; j < KT; ++j) out[j] = Bf16ToFloat(FloatToBf16(FoldLanes(sum[j])));
}

void ScoreRange(const IndexScoreParams& p, const RowPack& pack, int64_t r, int64_t t0, int64_t t1) {
  float* out = p.score + r * p.score_stride;
  const int64_t vis = p.visible ? p.visible[r] : p.n_keys;
  const int64_t end = std::min(t1, vis);
  int64_t t = t0;
  const uint16_t* keys[kKeyTile];
  for (; t + kKeyTile <= end; t += kKeyTile) {
    for (int j = 0; j < kKeyTile; ++j) keys[j] = IndexKeyAt(p, t + j);
    ScoreTile<kKeyTile>(pack, keys, out + t);
  }
  for (; t < end; ++t) {
    keys[0] = IndexKeyAt(p, t);
    ScoreTile<1>(pack, keys, out + t);
  }
  for (t = std::max(t0, end); t < t1; ++t) out[t] = -std::numeric_limits<float>::infinity();
}

}  // namespace

void IndexScoreAvx512(const IndexScoreParams& p, ThreadPool* pool) {
  CHECK(p.head_dim % 2 == 0) << "IndexScore: head_dim must be even, got " << p.head_dim;
  CheckIndexScoreParams(p);
  const int64_t chunks = (p.n_keys + kKeyChunk - 1) / kKeyChunk;
  const int64_t items = p.n_rows * chunks;
  auto run = [&](int64_t begin, int64_t end) {
    thread_local RowPack pack;
    int64_t packed_row = -1;
    for (int64_t it = begin; it < end; ++it) {
      const int64_t r = it / chunks, c = it % chunks;
      if (r != packed_row) {
        PackRow(p, r, &pack);
        packed_row = r;
      }
      ScoreRange(p, pack, r, c * kKeyChunk, std::min(p.n_keys, (c + 1) * kKeyChunk));
    }
  };
  if (pool == nullptr || items < 2) {
    run(0, items);
  } else {
    pool->ParallelFor(items, 1, run);
  }
}

}  // namespace deepinfer::kernels
