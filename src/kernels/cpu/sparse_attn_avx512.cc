// AVX-512 sparse attention, bit-identical to SparseAttnRef (sparse_attn.h gives the order).
// Work item = (query row, group of 16 heads); heads sit in the 16 lanes for q.kv, the online
// softmax and the denominators; for P.V the 16 lanes run along head_dim instead:
//   q.kv: q packed as [pair][16 heads] bf16 pairs, each KV row's pair broadcast, 12 list entries
//         per tile (12 independent VDPBF16PS chains);
//   P.V:  each block's rows are interleaved once into [entry pair][dim] (kv[2i][c], kv[2i+1][c])
//         and every head streams over them with its broadcast probability pair.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/exp_f32_avx512.h"
#include "kernels/cpu/sparse_attn.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
// The optimize pragma makes GCC 12 flag the intrinsics' internal self-initialised placeholders.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

constexpr int kTile = 12;
constexpr int kPairs = kSparseAttnBlock / 2;

struct Scratch {
  std::vector<uint32_t> qt;    // [d/2][16]
  std::vector<float> o;        // [16][d]
  std::vector<uint32_t> kvi;   // [kPairs][d]
  std::vector<uint16_t> zero;  // [d]
  alignas(64) float s[kSparseAttnBlock][16];
  alignas(64) uint16_t pb[16][kSparseAttnBlock + 2];
};

template <int KT>
void ScoreTile(const uint32_t* qt, int pairs, const uint16_t* const* rows, float* s_out,
               __m512 scale) {
  __m512 acc[KT];
  for (int j = 0; j < KT; ++j) acc[j] = _mm512_setzero_ps();
  for (int i = 0; i < pairs; ++i) {
    const __m512bh qv = (__m512bh)_mm512_loadu_si512(qt + i * 16);
    for (int j = 0; j < KT; ++j) {
      int32_t kp;
      std::memcpy(&kp, rows[j] + 2 * i, 4);
      acc[j] = _mm512_dpbf16_ps(acc[j], qv, (__m512bh)_mm512_set1_epi32(kp));
    }
  }
  for (int j = 0; j < KT; ++j) _mm512_store_ps(s_out + j * 16, _mm512_mul_ps(acc[j], scale));
}

// Interleaves rows[2i] and rows[2i+1] into kvi[i][c] = (rows[2i][c], rows[2i+1][c]).
void InterleaveBlock(const uint16_t* const* rows, int n_pairs, int d, uint32_t* kvi) {
  alignas(64) static const uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                               37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                               11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                               53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                               27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo = _mm512_load_si512(kLo), hi = _mm512_load_si512(kHi);
  for (int i = 0; i < n_pairs; ++i) {
    const uint16_t* a = rows[2 * i];
    const uint16_t* b = rows[2 * i + 1];
    uint32_t* dst = kvi + static_cast<int64_t>(i) * d;
    for (int c = 0; c < d; c += 32) {
      const __m512i va = _mm512_loadu_si512(a + c), vb = _mm512_loadu_si512(b + c);
      _mm512_storeu_si512(dst + c, _mm512_permutex2var_epi16(va, lo, vb));
      _mm512_storeu_si512(dst + c + 16, _mm512_permutex2var_epi16(va, hi, vb));
    }
  }
}

// o[c .. c + 16*NV) = o * alpha + sum over pairs of VDPBF16PS(kvi[i][c..], pair_i).
template <int NV>
void PvChunk(const uint32_t* kvi, int n_pairs, int d, const uint16_t* pb, __m512 alpha, float* o) {
  __m512 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_ps();
  for (int i = 0; i < n_pairs; ++i) {
    int32_t pp;
    std::memcpy(&pp, pb + 2 * i, 4);
    const __m512bh bp = (__m512bh)_mm512_set1_epi32(pp);
    const uint32_t* src = kvi + static_cast<int64_t>(i) * d;
    for (int v = 0; v < NV; ++v) {
      acc[v] = _mm512_dpbf16_ps(acc[v], (__m512bh)_mm512_loadu_si512(src + 16 * v), bp);
    }
  }
  for (int v = 0; v < NV; ++v) {
    const __m512 prev = _mm512_loadu_ps(o + 16 * v);
    _mm512_storeu_ps(o + 16 * v, _mm512_add_ps(_mm512_mul_ps(prev, alpha), acc[v]));
  }
}

void AttendGroup(const SparseAttnParams& p, int64_t r, int g, Scratch& sc) {
  const int d = p.head_dim, pairs = d / 2;
  const int h0 = g * 16, nh = std::min(16, p.n_heads - h0);
  const uint16_t* q = p.q + r * p.q_row_stride;
  const uint16_t* kv = p.row_kv ? p.row_kv[r] : p.kv;
  const int32_t* idx = p.idx + r * p.idx_stride;

  sc.qt.assign(static_cast<size_t>(pairs) * 16, 0u);
  for (int l = 0; l < nh; ++l) {
    const uint16_t* qh = q + static_cast<int64_t>(h0 + l) * d;
    for (int i = 0; i < pairs; ++i) std::memcpy(&sc.qt[i * 16 + l], qh + 2 * i, 4);
  }
  sc.o.assign(static_cast<size_t>(16) * d, 0.0f);
  sc.kvi.resize(static_cast<size_t>(kPairs) * d);
  sc.zero.assign(d, 0);

  const __m512 scale = _mm512_set1_ps(p.scale);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m = _mm512_set1_ps(-1e30f), l = _mm512_setzero_ps();
  const uint16_t* rows[kSparseAttnBlock + 1];
  for (int64_t b0 = 0; b0 < p.n_idx; b0 += kSparseAttnBlock) {
    const int bn = static_cast<int>(std::min<int64_t>(kSparseAttnBlock, p.n_idx - b0));
    for (int j = 0; j < bn; ++j) {
      const int32_t i = idx[b0 + j];
      rows[j] = i < 0 ? sc.zero.data() : kv + static_cast<int64_t>(i) * p.kv_stride;
    }
    int j = 0;
    for (; j + kTile <= bn; j += kTile)
      ScoreTile<kTile>(sc.qt.data(), pairs, rows + j, sc.s[j], scale);
    for (; j < bn; ++j) ScoreTile<1>(sc.qt.data(), pairs, rows + j, sc.s[j], scale);

    __m512 block_max = neg_inf;
    for (j = 0; j < bn; ++j) {
      if (idx[b0 + j] < 0) _mm512_store_ps(sc.s[j], neg_inf);
      block_max = _mm512_max_ps(block_max, _mm512_load_ps(sc.s[j]));
    }
    const __m512 m_new = _mm512_max_ps(m, block_max);
    const __m512 alpha = ExpF32x16(_mm512_sub_ps(m, m_new));
    __m512 psum = _mm512_setzero_ps();
    alignas(64) uint16_t pbj[16];
    for (j = 0; j < bn; ++j) {
      const __m512 pj = ExpF32x16(_mm512_sub_ps(_mm512_load_ps(sc.s[j]), m_new));
      psum = _mm512_add_ps(psum, pj);
      _mm256_store_si256(reinterpret_cast<__m256i*>(pbj), F32x16ToBf16(pj));
      for (int h = 0; h < 16; ++h) sc.pb[h][j] = pbj[h];
    }
    l = _mm512_add_ps(_mm512_mul_ps(l, alpha), psum);
    m = m_new;

    const int n_pairs = (bn + 1) / 2;
    if (bn & 1) {
      rows[bn] = sc.zero.data();
      for (int h = 0; h < 16; ++h) sc.pb[h][bn] = 0;
    }
    InterleaveBlock(rows, n_pairs, d, sc.kvi.data());
    alignas(64) float alpha_h[16];
    _mm512_store_ps(alpha_h, alpha);
    for (int h = 0; h < nh; ++h) {
      const __m512 a = _mm512_set1_ps(alpha_h[h]);
      float* oh = sc.o.data() + static_cast<int64_t>(h) * d;
      int c = 0;
      for (; c + 256 <= d; c += 256)
        PvChunk<16>(sc.kvi.data() + c, n_pairs, d, sc.pb[h], a, oh + c);
      for (; c < d; c += 32) PvChunk<2>(sc.kvi.data() + c, n_pairs, d, sc.pb[h], a, oh + c);
    }
  }
  alignas(64) float sink[16] = {};
  for (int l2 = 0; l2 < nh; ++l2) sink[l2] = p.sink[h0 + l2];
  l = _mm512_add_ps(l, ExpF32x16(_mm512_sub_ps(_mm512_load_ps(sink), m)));
  alignas(64) float l_h[16];
  _mm512_store_ps(l_h, l);
  for (int h = 0; h < nh; ++h) {
    const __m512 lv = _mm512_set1_ps(l_h[h]);
    const float* oh = sc.o.data() + static_cast<int64_t>(h) * d;
    uint16_t* out = p.out + r * p.out_row_stride + static_cast<int64_t>(h0 + h) * d;
    for (int c = 0; c < d; c += 16) {
      const __m512 v = _mm512_div_ps(_mm512_loadu_ps(oh + c), lv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), F32x16ToBf16(v));
    }
  }
}

}  // namespace

void SparseAttnAvx512(const SparseAttnParams& p, ThreadPool* pool) {
  CheckSparseAttnParams(p);
  CHECK(p.head_dim % 32 == 0) << "SparseAttnAvx512: head_dim " << p.head_dim;
  const int groups = (p.n_heads + 15) / 16;
  const int64_t items = p.n_rows * groups;
  auto run = [&](int64_t begin, int64_t end) {
    thread_local Scratch sc;
    for (int64_t it = begin; it < end; ++it)
      AttendGroup(p, it / groups, static_cast<int>(it % groups), sc);
  };
  if (pool == nullptr || items < 2) {
    run(0, items);
  } else {
    pool->ParallelFor(items, 1, run);
  }
}

}  // namespace deepinfer::kernels
