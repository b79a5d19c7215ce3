// AVX-512 sparse attention, bit-identical to SparseAttnRef (sparse_attn.h gives the order).
//
// Work item = (query row, group of G x 16 heads), G in {1, 2, 4}; every head sits in one fp32
// lane for the whole computation, so each head's operations are the reference's, in its order,
// and the heads of a row form the M dimension of two small GEMMs per block of 64 list entries:
//   scores  S[e][h] = sum_i qt[i][h] * kv[e][pair i]   qt: the row's q as [d/2 pairs][heads]
//           tile G head vectors x NE entries, each KV pair broadcast (VDPBF16PS chains over i);
//   P.V     O[c][h] = O * alpha + sum_j p2[j][h] * kvi[j][c]
//           p2: bf16 probabilities as [entry pair][heads], kvi: the block's KV rows interleaved
//           into [entry pair][dim]; tile G head vectors x CT dims, each kvi dword broadcast.
// O is kept as [dim][heads] and transposed once per row at the end (16x16 in registers).
// Trailing masked entries of a row's list (the prefill rows' -1 padding) are not computed: a
// skipped masked pair only adds +0 to a block sum, a skipped fully masked block multiplies O by
// exp(0) = 1 and adds +0, so the skipped work is replaced by "+ 0.0f" (which turns -0 into +0,
// exactly as the skipped operations would).
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
#include "kernels/cpu/transpose_avx512.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
// The optimize pragma makes GCC 12 flag the intrinsics' internal self-initialised placeholders.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

constexpr int kBlock = kSparseAttnBlock;
constexpr int kPairs = kBlock / 2;
constexpr int kMaxG = 4;  // head vectors per work item (64 heads)

struct Scratch {
  std::vector<uint32_t> qt;                      // [d/2][16 G] q pairs
  std::vector<float> ot;                         // [d][16 G] running output
  std::vector<uint32_t> kvi;                     // [kPairs][d] interleaved KV pairs of the block
  std::vector<uint16_t> zero;                    // [d]
  alignas(64) float s[kBlock * 16 * kMaxG];      // [entry][16 G] scores
  alignas(64) uint32_t p2[kPairs * 16 * kMaxG];  // [entry pair][16 G] bf16 pairs
};

// s[e][16 G] = scale * q . rows[e] for NE entries.
template <int G, int NE>
inline void ScoreTile(const uint32_t* qt, int pairs, const uint16_t* const* rows, float* s,
                      __m512 scale) {
  __m512 acc[G][NE];
  for (int g = 0; g < G; ++g)
    for (int e = 0; e < NE; ++e) acc[g][e] = _mm512_setzero_ps();
  for (int i = 0; i < pairs; ++i) {
    __m512bh qv[G];
    for (int g = 0; g < G; ++g) qv[g] = (__m512bh)_mm512_load_si512(qt + (i * G + g) * 16);
    for (int e = 0; e < NE; ++e) {
      int32_t kp;
      std::memcpy(&kp, rows[e] + 2 * i, 4);
      const __m512bh kb = (__m512bh)_mm512_set1_epi32(kp);
      for (int g = 0; g < G; ++g) acc[g][e] = _mm512_dpbf16_ps(acc[g][e], qv[g], kb);
    }
  }
  for (int e = 0; e < NE; ++e)
    for (int g = 0; g < G; ++g)
      _mm512_store_ps(s + (e * G + g) * 16, _mm512_mul_ps(acc[g][e], scale));
}

template <int G, int NE>
void ScoreRange(const uint32_t* qt, int pairs, const uint16_t* const* rows, int n, float* s,
                __m512 scale) {
  int e = 0;
  for (; e + NE <= n; e += NE) ScoreTile<G, NE>(qt, pairs, rows + e, s + e * G * 16, scale);
  const int left = n - e;
  rows += e;
  s += e * G * 16;
  if constexpr (NE > 1) {
    // Remainder as one tile of the remaining width (at most NE - 1 <= 11).
    switch (left) {
#define DI_SCORE_CASE(k)                                              \
  case k:                                                             \
    if constexpr (k < NE) ScoreTile<G, k>(qt, pairs, rows, s, scale); \
    break;
      DI_SCORE_CASE(1)
      DI_SCORE_CASE(2)
      DI_SCORE_CASE(3)
      DI_SCORE_CASE(4)
      DI_SCORE_CASE(5)
      DI_SCORE_CASE(6)
      DI_SCORE_CASE(7)
      DI_SCORE_CASE(8)
      DI_SCORE_CASE(9)
      DI_SCORE_CASE(10)
      DI_SCORE_CASE(11)
#undef DI_SCORE_CASE
      default:
        break;
    }
  }
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

// For CT dims c0..c0+CT: ot[c][h] = ot[c][h] * alpha[h] + (sum over pairs of p2[j][h] kvi[j][c])
// (+ 0 when trailing zero pairs were skipped).
template <int G, int CT>
inline void PvTile(const uint32_t* p2, const uint32_t* kvi, int n_pairs, int d, int c0,
                   const __m512* alpha, bool add_zero, float* ot) {
  __m512 acc[G][CT];
  for (int g = 0; g < G; ++g)
    for (int c = 0; c < CT; ++c) acc[g][c] = _mm512_setzero_ps();
  for (int j = 0; j < n_pairs; ++j) {
    __m512bh pv[G];
    for (int g = 0; g < G; ++g) pv[g] = (__m512bh)_mm512_load_si512(p2 + (j * G + g) * 16);
    const uint32_t* src = kvi + static_cast<int64_t>(j) * d + c0;
    for (int c = 0; c < CT; ++c) {
      const __m512bh kb = (__m512bh)_mm512_set1_epi32(static_cast<int32_t>(src[c]));
      for (int g = 0; g < G; ++g) acc[g][c] = _mm512_dpbf16_ps(acc[g][c], pv[g], kb);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int c = 0; c < CT; ++c) {
    for (int g = 0; g < G; ++g) {
      __m512 sum = acc[g][c];
      if (add_zero) sum = _mm512_add_ps(sum, zero);
      float* o = ot + ((static_cast<int64_t>(c0) + c) * G + g) * 16;
      _mm512_store_ps(o, _mm512_add_ps(_mm512_mul_ps(_mm512_load_ps(o), alpha[g]), sum));
    }
  }
}

template <int G>
struct Tiles;
template <>
struct Tiles<1> {
  static constexpr int kNe = 12, kCt = 16;
};
template <>
struct Tiles<2> {
  static constexpr int kNe = 12, kCt = 8;
};
template <>
struct Tiles<4> {
  static constexpr int kNe = 6, kCt = 4;
};

// Row r, heads h0 .. h0 + nh (nh <= 16 G; the missing lanes compute on zeros and are not stored).
template <int G>
void AttendItem(const SparseAttnParams& p, int64_t r, int h0, int nh, Scratch& sc) {
  constexpr int L = 16 * G;
  const int d = p.head_dim, pairs = d / 2;
  const uint16_t* q = p.q + r * p.q_row_stride;
  const uint16_t* kv = p.row_kv ? p.row_kv[r] : p.kv;
  const int32_t* idx = p.idx + r * p.idx_stride;

  // q as [pair][head] dwords: 16x16 transposes of (16 heads x 16 pairs) blocks.
  sc.qt.resize(static_cast<size_t>(pairs) * L + 16);
  uint32_t* qt = sc.qt.data();
  if (reinterpret_cast<uintptr_t>(qt) % 64 != 0)
    qt += (64 - reinterpret_cast<uintptr_t>(qt) % 64) / 4;
  for (int g = 0; g < G; ++g) {
    for (int i0 = 0; i0 < pairs; i0 += 16) {
      __m512 t[16];
      for (int l = 0; l < 16; ++l) {
        t[l] = l < nh - 16 * g ? _mm512_loadu_ps(reinterpret_cast<const float*>(
                                     q + static_cast<int64_t>(h0 + 16 * g + l) * d + 2 * i0))
                               : _mm512_setzero_ps();
      }
      Transpose16x16(t);
      for (int k = 0; k < 16; ++k)
        _mm512_store_ps(reinterpret_cast<float*>(qt + ((i0 + k) * G + g) * 16), t[k]);
    }
  }
  sc.ot.resize(static_cast<size_t>(d) * L + 16);
  float* ot = sc.ot.data();
  if (reinterpret_cast<uintptr_t>(ot) % 64 != 0)
    ot += (64 - reinterpret_cast<uintptr_t>(ot) % 64) / 4;
  std::fill(ot, ot + static_cast<int64_t>(d) * L, 0.0f);
  sc.kvi.resize(static_cast<size_t>(kPairs) * d);
  sc.zero.assign(d, 0);

  int64_t n_live = p.n_idx;  // entries after the last valid index are skipped
  while (n_live > 0 && idx[n_live - 1] < 0) --n_live;

  const __m512 scale = _mm512_set1_ps(p.scale);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m[G], l[G];
  for (int g = 0; g < G; ++g) {
    m[g] = _mm512_set1_ps(-1e30f);
    l[g] = _mm512_setzero_ps();
  }
  const uint16_t* rows[kBlock + 1];
  for (int64_t b0 = 0; b0 < n_live; b0 += kBlock) {
    const int bn = static_cast<int>(std::min<int64_t>(kBlock, p.n_idx - b0));
    const int nv = static_cast<int>(std::min<int64_t>(bn, n_live - b0));  // >= 1
    for (int j = 0; j < nv; ++j) {
      const int32_t i = idx[b0 + j];
      rows[j] = i < 0 ? sc.zero.data() : kv + static_cast<int64_t>(i) * p.kv_stride;
    }
    ScoreRange<G, Tiles<G>::kNe>(qt, pairs, rows, nv, sc.s, scale);

    __m512 m_new[G], alpha[G], psum[G];
    for (int g = 0; g < G; ++g) {
      __m512 block_max = neg_inf;
      for (int j = 0; j < nv; ++j) {
        if (idx[b0 + j] < 0) _mm512_store_ps(sc.s + j * L + g * 16, neg_inf);
        // A NaN score keeps block_max, as fmax does in the reference.
        block_max = _mm512_max_ps(_mm512_load_ps(sc.s + j * L + g * 16), block_max);
      }
      m_new[g] = _mm512_max_ps(m[g], block_max);
      alpha[g] = ExpF32x16(_mm512_sub_ps(m[g], m_new[g]));
      psum[g] = _mm512_setzero_ps();
    }
    // Probabilities, summed in ascending entry order, and packed into bf16 pairs per head.
    const int n_pairs = (nv + 1) / 2;
    for (int jp = 0; jp < n_pairs; ++jp) {
      for (int g = 0; g < G; ++g) {
        const __m512 pa =
            ExpF32x16(_mm512_sub_ps(_mm512_load_ps(sc.s + 2 * jp * L + g * 16), m_new[g]));
        psum[g] = _mm512_add_ps(psum[g], pa);
        __m512i packed = _mm512_cvtepu16_epi32(F32x16ToBf16(pa));
        if (2 * jp + 1 < nv) {
          const __m512 pb =
              ExpF32x16(_mm512_sub_ps(_mm512_load_ps(sc.s + (2 * jp + 1) * L + g * 16), m_new[g]));
          psum[g] = _mm512_add_ps(psum[g], pb);
          packed = _mm512_or_si512(packed,
                                   _mm512_slli_epi32(_mm512_cvtepu16_epi32(F32x16ToBf16(pb)), 16));
        }
        _mm512_store_si512(sc.p2 + jp * L + g * 16, packed);
      }
    }
    for (int g = 0; g < G; ++g) {
      l[g] = _mm512_add_ps(_mm512_mul_ps(l[g], alpha[g]), psum[g]);
      m[g] = m_new[g];
    }
    if (nv & 1) rows[nv] = sc.zero.data();
    InterleaveBlock(rows, n_pairs, d, sc.kvi.data());
    const bool add_zero = n_pairs < (bn + 1) / 2;
    constexpr int kCt = Tiles<G>::kCt;
    for (int c = 0; c < d; c += kCt) {
      PvTile<G, kCt>(sc.p2, sc.kvi.data(), n_pairs, d, c, alpha, add_zero, ot);
    }
  }
  // Fully masked trailing blocks: O * exp(0) + 0.
  const bool skipped_blocks = ((n_live + kBlock - 1) / kBlock) * kBlock < p.n_idx;

  alignas(64) float sink[L] = {};
  for (int h = 0; h < nh; ++h) sink[h] = p.sink[h0 + h];
  __m512 lg[G];
  for (int g = 0; g < G; ++g) {
    lg[g] = _mm512_add_ps(l[g], ExpF32x16(_mm512_sub_ps(_mm512_load_ps(sink + 16 * g), m[g])));
  }
  alignas(64) float l_h[L];
  for (int g = 0; g < G; ++g) _mm512_store_ps(l_h + 16 * g, lg[g]);
  // out[h][c] = bf16(o[c][h] / l[h]): transpose 16 dims x 16 heads, divide per head.
  for (int g = 0; g < G; ++g) {
    for (int c0 = 0; c0 < d; c0 += 16) {
      __m512 t[16];
      for (int k = 0; k < 16; ++k) {
        t[k] = _mm512_load_ps(ot + ((static_cast<int64_t>(c0) + k) * G + g) * 16);
        if (skipped_blocks) t[k] = _mm512_add_ps(t[k], _mm512_setzero_ps());
      }
      Transpose16x16(t);
      const int n_here = std::min(16, nh - 16 * g);
      for (int k = 0; k < n_here; ++k) {
        const int h = 16 * g + k;
        const __m512 v = _mm512_div_ps(t[k], _mm512_set1_ps(l_h[h]));
        uint16_t* out = p.out + r * p.out_row_stride + static_cast<int64_t>(h0 + h) * d + c0;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), F32x16ToBf16(v));
      }
    }
  }
}

}  // namespace

void SparseAttnAvx512(const SparseAttnParams& p, ThreadPool* pool) {
  CheckSparseAttnParams(p);
  CHECK(p.head_dim % 32 == 0) << "SparseAttnAvx512: head_dim " << p.head_dim;
  // Many rows: one item per (row, 64 heads), the GEMM-shaped tiles. Few rows (decode): 16 heads
  // per item so that every thread gets work. Each head's result is the same either way.
  const int threads = pool ? pool->size() : 1;
  const int vecs = (p.n_heads + 15) / 16;
  int g = 1;
  if (p.n_rows >= 2 * threads) g = vecs >= 4 ? 4 : (vecs >= 2 ? 2 : 1);
  const int heads_per_item = 16 * g;
  const int groups = (p.n_heads + heads_per_item - 1) / heads_per_item;
  const int64_t items = p.n_rows * groups;
  auto run_item = [&](int64_t it, Scratch& sc) {
    const int64_t r = it / groups;
    const int h0 = static_cast<int>(it % groups) * heads_per_item;
    const int nh = std::min(heads_per_item, p.n_heads - h0);
    switch (g) {
      case 4:
        AttendItem<4>(p, r, h0, nh, sc);
        break;
      case 2:
        AttendItem<2>(p, r, h0, nh, sc);
        break;
      default:
        AttendItem<1>(p, r, h0, nh, sc);
        break;
    }
  };
  if (pool == nullptr) {
    thread_local Scratch sc;
    for (int64_t it = 0; it < items; ++it) run_item(it, sc);
    return;
  }
  // Items differ in cost (rows have different list lengths) and a core of a shared host can
  // stall: threads take items from a shared counter. Which thread runs an item does not change
  // its result.
  pool->ParallelForDynamic(items, 1, [&](int64_t begin, int64_t end) {
    thread_local Scratch sc;
    for (int64_t it = begin; it < end; ++it) run_item(it, sc);
  });
}

}  // namespace deepinfer::kernels
