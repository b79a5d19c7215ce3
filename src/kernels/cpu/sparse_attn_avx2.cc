// AVX2 sparse attention, bit-identical to SparseAttnRef (sparse_attn.h gives the order).
//
// Work item = (query row, group of G x 8 heads), G in {2, 4}; every head sits in one fp32 lane for
// the whole computation, so each head's operations are the reference's, in its order. Per block
// of 64 list entries the block's KV rows are widened once to fp32 (kvf [entry][dim]) and serve
// two small GEMMs whose broadcast operand is a kvf element (vbroadcastss from L1/L2):
//   scores  S[e][h] = sum_c qf[c][h] * kvf[e][c]    c in pair order 1, 0, 3, 2, ...
//   P.V     B[c][h] = sum_e pf[e][h] * kvf[e][c]    e in pair order 1, 0, 3, 2, ...
// qf is the row's q as [dim][heads] fp32, pf the bf16-rounded probabilities as [entry][heads].
//
// vdpbf16ps semantics without vdpbf16ps: a bf16 x bf16 product is exact in fp32, so each pair
// step is two FMAs, odd element first (dpbf16_step.h). The instruction's denormals-are-zero on
// its inputs and flush-to-zero on its results are MXCSR.DAZ and MXCSR.FTZ, set only around the
// two GEMMs: the reference's other operations (the score scale, exp, O * alpha + B, the sink, the
// division) keep gradual underflow and run with the caller's MXCSR. One corner differs by
// construction: x86 decides "tiny" after rounding, the scalar emulation before flushing its
// correctly rounded result, so a sum in (2^-126 - 2^-150, 2^-126 - 2^-151] flushes here and
// rounds up to 2^-126 there (a partial sum that close to the fp32 normal limit).
//
// Trailing masked entries of a row's list are skipped as in the AVX-512 path (sparse_attn_avx512.cc
// explains why "+ 0.0f" replaces the skipped work).
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/exp_f32_avx2.h"
#include "kernels/cpu/sparse_attn.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

constexpr int kBlock = kSparseAttnBlock;
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR flush-to-zero | denormals-are-zero

// 32-byte aligned fp32 scratch that grows on demand.
struct F32Buf {
  std::vector<float> v;
  float* Get(size_t n) {
    if (v.size() < n + 8) v.resize(n + 8);
    float* p = v.data();
    const uintptr_t mis = reinterpret_cast<uintptr_t>(p) % 32;
    return mis ? p + (32 - mis) / 4 : p;
  }
};

struct Scratch {
  F32Buf qf, kvf, s, pf, bs, ot;
};

// Raw dots s[e][L] (lanes g0*8 .. (g0+GT)*8) of NE entries, c in pair order.
template <int GT, int NE>
inline void ScoreTile(const float* qf, int L, const float* kvf, int d, float* s) {
  __m256 acc[GT][NE];
  for (int g = 0; g < GT; ++g)
    for (int e = 0; e < NE; ++e) acc[g][e] = _mm256_setzero_ps();
  for (int c0 = 0; c0 < d; c0 += 2) {
    for (int k = 1; k >= 0; --k) {
      const int c = c0 + k;
      __m256 qv[GT];
      for (int g = 0; g < GT; ++g) qv[g] = _mm256_load_ps(qf + static_cast<int64_t>(c) * L + 8 * g);
      for (int e = 0; e < NE; ++e) {
        const __m256 kb = _mm256_broadcast_ss(kvf + static_cast<int64_t>(e) * d + c);
        for (int g = 0; g < GT; ++g) acc[g][e] = _mm256_fmadd_ps(qv[g], kb, acc[g][e]);
      }
    }
  }
  for (int e = 0; e < NE; ++e)
    for (int g = 0; g < GT; ++g)
      _mm256_store_ps(s + static_cast<int64_t>(e) * L + 8 * g, acc[g][e]);
}

// Dots of n entries for GT head vectors at qf/s offset lanes.
template <int GT>
void ScoreRange(const float* qf, int L, const float* kvf, int d, int n, float* s) {
  constexpr int kNe = 12 / GT;
  int e = 0;
  for (; e + kNe <= n; e += kNe) {
    ScoreTile<GT, kNe>(qf, L, kvf + static_cast<int64_t>(e) * d, d,
                       s + static_cast<int64_t>(e) * L);
  }
  const float* kv = kvf + static_cast<int64_t>(e) * d;
  float* se = s + static_cast<int64_t>(e) * L;
  switch (n - e) {
    case 1:
      ScoreTile<GT, 1>(qf, L, kv, d, se);
      break;
    case 2:
      ScoreTile<GT, 2>(qf, L, kv, d, se);
      break;
    case 3:
      ScoreTile<GT, 3>(qf, L, kv, d, se);
      break;
    case 4:
      if constexpr (kNe > 4) ScoreTile<GT, 4>(qf, L, kv, d, se);
      break;
    case 5:
      if constexpr (kNe > 5) ScoreTile<GT, 5>(qf, L, kv, d, se);
      break;
    default:
      break;
  }
}

// Block sums bs[c][lanes] for CT dims from c0, over n_entries (even) in pair order.
template <int GT, int CT>
inline void PvTile(const float* pf, int L, const float* kvf, int d, int n_entries, int c0,
                   float* bs) {
  __m256 acc[GT][CT];
  for (int g = 0; g < GT; ++g)
    for (int c = 0; c < CT; ++c) acc[g][c] = _mm256_setzero_ps();
  for (int e0 = 0; e0 < n_entries; e0 += 2) {
    for (int k = 1; k >= 0; --k) {
      const int e = e0 + k;
      __m256 pv[GT];
      for (int g = 0; g < GT; ++g) pv[g] = _mm256_load_ps(pf + static_cast<int64_t>(e) * L + 8 * g);
      const float* src = kvf + static_cast<int64_t>(e) * d + c0;
      for (int c = 0; c < CT; ++c) {
        const __m256 kb = _mm256_broadcast_ss(src + c);
        for (int g = 0; g < GT; ++g) acc[g][c] = _mm256_fmadd_ps(pv[g], kb, acc[g][c]);
      }
    }
  }
  for (int c = 0; c < CT; ++c)
    for (int g = 0; g < GT; ++g)
      _mm256_store_ps(bs + (static_cast<int64_t>(c0) + c) * L + 8 * g, acc[g][c]);
}

// bf16 row -> fp32 row (d a multiple of 8).
inline void WidenRow(const uint16_t* src, int d, float* dst) {
  for (int c = 0; c < d; c += 8) _mm256_store_ps(dst + c, LoadBf16x8(src + c));
}

// Row r, heads h0 .. h0 + nh (nh <= 8 G; the missing lanes compute on zeros and are not stored).
template <int G>
void AttendItem(const SparseAttnParams& p, int64_t r, int h0, int nh, Scratch& sc) {
  constexpr int L = 8 * G;
  const int d = p.head_dim;
  const uint16_t* q = p.q + r * p.q_row_stride;
  const uint16_t* kv = p.row_kv ? p.row_kv[r] : p.kv;
  const int32_t* idx = p.idx + r * p.idx_stride;

  float* qf = sc.qf.Get(static_cast<size_t>(d) * L);
  for (int h = 0; h < L; ++h) {
    const uint16_t* qh = q + static_cast<int64_t>(h0 + h) * d;
    for (int c = 0; c < d; ++c)
      qf[static_cast<int64_t>(c) * L + h] = h < nh ? Bf16ToFloat(qh[c]) : 0;
  }
  float* ot = sc.ot.Get(static_cast<size_t>(d) * L);
  std::fill(ot, ot + static_cast<int64_t>(d) * L, 0.0f);
  float* kvf = sc.kvf.Get(static_cast<size_t>(kBlock + 1) * d);
  float* s = sc.s.Get(static_cast<size_t>(kBlock) * L);
  float* pf = sc.pf.Get(static_cast<size_t>(kBlock + 1) * L);
  float* bs = sc.bs.Get(static_cast<size_t>(d) * L);

  int64_t n_live = p.n_idx;  // entries after the last valid index are skipped
  while (n_live > 0 && idx[n_live - 1] < 0) --n_live;

  const unsigned csr = _mm_getcsr();
  const __m256 scale = _mm256_set1_ps(p.scale);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m[G], l[G];
  for (int g = 0; g < G; ++g) {
    m[g] = _mm256_set1_ps(-1e30f);
    l[g] = _mm256_setzero_ps();
  }
  for (int64_t b0 = 0; b0 < n_live; b0 += kBlock) {
    const int bn = static_cast<int>(std::min<int64_t>(kBlock, p.n_idx - b0));
    const int nv = static_cast<int>(std::min<int64_t>(bn, n_live - b0));  // >= 1
    const int padded = nv + (nv & 1);
    for (int j = 0; j < padded; ++j) {
      float* dst = kvf + static_cast<int64_t>(j) * d;
      const int32_t i = j < nv ? idx[b0 + j] : -1;
      if (i < 0) {
        std::fill(dst, dst + d, 0.0f);
      } else {
        WidenRow(kv + static_cast<int64_t>(i) * p.kv_stride, d, dst);
      }
    }
    _mm_setcsr(csr | kFtzDaz);
    for (int g = 0; g < G; g += 2) ScoreRange<2>(qf + 8 * g, L, kvf, d, nv, s + 8 * g);
    _mm_setcsr(csr);

    __m256 m_new[G], alpha[G], psum[G];
    for (int g = 0; g < G; ++g) {
      __m256 block_max = neg_inf;
      for (int j = 0; j < nv; ++j) {
        float* sj = s + static_cast<int64_t>(j) * L + 8 * g;
        const __m256 v = idx[b0 + j] < 0 ? neg_inf : _mm256_mul_ps(_mm256_load_ps(sj), scale);
        _mm256_store_ps(sj, v);
        block_max = _mm256_max_ps(v, block_max);  // NaN v keeps block_max, as fmax
      }
      m_new[g] = _mm256_max_ps(m[g], block_max);
      alpha[g] = ExpF32x8(_mm256_sub_ps(m[g], m_new[g]));
      psum[g] = _mm256_setzero_ps();
      // Probabilities summed in ascending entry order; their bf16 roundings feed P.V.
      for (int j = 0; j < nv; ++j) {
        const __m256 pj = ExpF32x8(
            _mm256_sub_ps(_mm256_load_ps(s + static_cast<int64_t>(j) * L + 8 * g), m_new[g]));
        psum[g] = _mm256_add_ps(psum[g], pj);
        _mm256_store_ps(pf + static_cast<int64_t>(j) * L + 8 * g, RoundToBf16x8(pj));
      }
      if (nv & 1) _mm256_store_ps(pf + static_cast<int64_t>(nv) * L + 8 * g, _mm256_setzero_ps());
      l[g] = _mm256_add_ps(_mm256_mul_ps(l[g], alpha[g]), psum[g]);
      m[g] = m_new[g];
    }

    _mm_setcsr(csr | kFtzDaz);
    constexpr int kCt = 4;
    for (int c = 0; c < d; c += kCt) {
      for (int g = 0; g < G; g += 2) PvTile<2, kCt>(pf + 8 * g, L, kvf, d, padded, c, bs + 8 * g);
    }
    _mm_setcsr(csr);
    const bool add_zero = padded < bn + (bn & 1);
    const __m256 zero = _mm256_setzero_ps();
    for (int c = 0; c < d; ++c) {
      for (int g = 0; g < G; ++g) {
        const int64_t o = static_cast<int64_t>(c) * L + 8 * g;
        __m256 sum = _mm256_load_ps(bs + o);
        if (add_zero) sum = _mm256_add_ps(sum, zero);
        _mm256_store_ps(ot + o,
                        _mm256_add_ps(_mm256_mul_ps(_mm256_load_ps(ot + o), alpha[g]), sum));
      }
    }
  }
  // Fully masked trailing blocks: O * exp(0) + 0.
  const bool skipped_blocks = ((n_live + kBlock - 1) / kBlock) * kBlock < p.n_idx;

  alignas(32) float sink[L] = {};
  for (int h = 0; h < nh; ++h) sink[h] = p.sink[h0 + h];
  alignas(32) float l_h[L];
  for (int g = 0; g < G; ++g) {
    const __m256 lg =
        _mm256_add_ps(l[g], ExpF32x8(_mm256_sub_ps(_mm256_load_ps(sink + 8 * g), m[g])));
    _mm256_store_ps(l_h + 8 * g, lg);
  }
  for (int h = 0; h < nh; ++h) {
    uint16_t* out = p.out + r * p.out_row_stride + static_cast<int64_t>(h0 + h) * d;
    for (int c = 0; c < d; ++c) {
      float o = ot[static_cast<int64_t>(c) * L + h];
      if (skipped_blocks) o = o + 0.0f;
      out[c] = FloatToBf16(o / l_h[h]);
    }
  }
}

}  // namespace

void SparseAttnAvx2(const SparseAttnParams& p, ThreadPool* pool) {
  CheckSparseAttnParams(p);
  CHECK(p.head_dim % 8 == 0) << "SparseAttnAvx2: head_dim " << p.head_dim;
  // Many rows: one item per (row, 32 heads), so the widened KV block serves 32 heads. Few rows
  // (decode): 16 heads per item so that every thread gets work. Each head's result is the same
  // either way.
  const int threads = pool ? pool->size() : 1;
  const int g = p.n_rows >= 2 * threads && p.n_heads > 16 ? 4 : 2;
  const int heads_per_item = 8 * g;
  const int groups = (p.n_heads + heads_per_item - 1) / heads_per_item;
  const int64_t items = p.n_rows * groups;
  auto run_item = [&](int64_t it, Scratch& sc) {
    const int64_t r = it / groups;
    const int h0 = static_cast<int>(it % groups) * heads_per_item;
    const int nh = std::min(heads_per_item, p.n_heads - h0);
    if (g == 4) {
      AttendItem<4>(p, r, h0, nh, sc);
    } else {
      AttendItem<2>(p, r, h0, nh, sc);
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
