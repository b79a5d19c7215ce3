// AVX2 fallback of the bf16 / fp32 lane-partial GEMMs: the 16 lane partials of an output live in
// two ymm (lanes 0..7 and 8..15). bf16 pairs run as two FMAs, odd element first, under MXCSR
// DAZ|FTZ, which is exactly the vdpbf16ps step (fused, subnormals in and out flushed); MXCSR is
// restored before the reduction tree, which is plain IEEE like on AVX-512. K tails go through a
// zero-padded copy (AVX2 has no 16-bit masked loads).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/cpu_features.h"
#include "kernels/cpu/dense_gemm_internal.h"

namespace deepinfer::kernels {

namespace {

constexpr int kTile = 2;
constexpr unsigned kDazFtz = 0x8040;

inline float ReduceTree(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// acc += pairs (odd first) of 8 bf16 pairs a and b.
inline __m256 PairStep(__m256 acc, __m256i a, __m256i b) {
  const __m256i odd = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(a, odd)),
                        _mm256_castsi256_ps(_mm256_and_si256(b, odd)), acc);
  return _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)),
                         _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)), acc);
}

template <int MR, int NR>
void TileBf16(const DenseGemmCall& c, int64_t m0, int64_t n0, unsigned csr) {
  const auto* w = static_cast<const uint16_t*>(c.w) + n0 * c.ldw;
  const auto* x = static_cast<const uint16_t*>(c.x) + m0 * c.ldx;
  __m256 lo[MR][NR], hi[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) lo[i][j] = hi[i][j] = _mm256_setzero_ps();
  alignas(32) uint16_t wt[NR][32], xt[MR][32];  // zero-padded tail copies
  // Where StreamPrefetchStyle() is the spread form (Intel), the AVX-512 tile's weight prefetch:
  // each row's line kPrefetchK elements ahead into L1 and kL2PrefetchK ahead into L2, past the
  // row's end into the next tile's rows (Intel host at the AVX2 level: the bf16 GEMV 75% -> 107%
  // of the paired read, docs/performance.md, session 33). AMD hosts keep the hardware prefetcher
  // alone, as the AVX2 FP8 GEMV measured on Zen 1. A local lambda, as in the AVX-512 tiles (GCC 12
  // drops the prefetches from a shared helper).
  constexpr int64_t kPrefetchK = 2048;
  constexpr int64_t kL2PrefetchK = 8192;
  const bool prefetch = StreamPrefetchStyle() == StreamPrefetch::kSpread;
  const auto* w_next = w + NR * c.ldw;
  auto ahead_of = [&](int j, int64_t ahead) {
    return reinterpret_cast<const char*>(ahead < c.k ? w + j * c.ldw + ahead
                                                     : w_next + j * c.ldw + (ahead - c.k));
  };
  _mm_setcsr(csr | kDazFtz);
  for (int64_t k = 0; k < c.k; k += 32) {
    for (int j = 0; prefetch && j < NR; ++j) {
      _mm_prefetch(ahead_of(j, k + kPrefetchK), _MM_HINT_T0);
      _mm_prefetch(ahead_of(j, k + kL2PrefetchK), _MM_HINT_T1);
    }
    const uint16_t* wp[NR];
    const uint16_t* xp[MR];
    if (k + 32 <= c.k) {
      for (int j = 0; j < NR; ++j) wp[j] = w + j * c.ldw + k;
      for (int i = 0; i < MR; ++i) xp[i] = x + i * c.ldx + k;
    } else {
      const size_t bytes = static_cast<size_t>(c.k - k) * 2;
      for (int j = 0; j < NR; ++j) {
        std::memset(wt[j], 0, sizeof(wt[j]));
        std::memcpy(wt[j], w + j * c.ldw + k, bytes);
        wp[j] = wt[j];
      }
      for (int i = 0; i < MR; ++i) {
        std::memset(xt[i], 0, sizeof(xt[i]));
        std::memcpy(xt[i], x + i * c.ldx + k, bytes);
        xp[i] = xt[i];
      }
    }
    __m256i w0[NR], w1[NR];
    for (int j = 0; j < NR; ++j) {
      w0[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp[j]));
      w1[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp[j] + 16));
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp[i]));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp[i] + 16));
      for (int j = 0; j < NR; ++j) {
        lo[i][j] = PairStep(lo[i][j], w0[j], x0);
        hi[i][j] = PairStep(hi[i][j], w1[j], x1);
      }
    }
  }
  _mm_setcsr(csr);
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) StoreDenseOut(c, m0 + i, n0 + j, ReduceTree(lo[i][j], hi[i][j]));
}

// 8 elements widened to fp32 (bf16 exactly) from a zero-padded or in-bounds pointer.
template <bool kBf16>
inline __m256 LoadF32x8(const void* p) {
  if constexpr (kBf16) {
    const __m128i b = _mm_loadu_si128(static_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(p));
  }
}

template <bool kWeightBf16, bool kActBf16, int MR, int NR>
void TileF32(const DenseGemmCall& c, int64_t m0, int64_t n0, unsigned /*csr*/) {
  using WT = std::conditional_t<kWeightBf16, uint16_t, float>;
  using XT = std::conditional_t<kActBf16, uint16_t, float>;
  const auto* w = static_cast<const WT*>(c.w) + n0 * c.ldw;
  const auto* x = static_cast<const XT*>(c.x) + m0 * c.ldx;
  __m256 lo[MR][NR], hi[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) lo[i][j] = hi[i][j] = _mm256_setzero_ps();
  alignas(32) WT wt[NR][16];
  alignas(32) XT xt[MR][16];
  for (int64_t k = 0; k < c.k; k += 16) {
    const WT* wp[NR];
    const XT* xp[MR];
    if (k + 16 <= c.k) {
      for (int j = 0; j < NR; ++j) wp[j] = w + j * c.ldw + k;
      for (int i = 0; i < MR; ++i) xp[i] = x + i * c.ldx + k;
    } else {
      const size_t n_tail = static_cast<size_t>(c.k - k);
      for (int j = 0; j < NR; ++j) {
        std::memset(wt[j], 0, sizeof(wt[j]));
        std::memcpy(wt[j], w + j * c.ldw + k, n_tail * sizeof(WT));
        wp[j] = wt[j];
      }
      for (int i = 0; i < MR; ++i) {
        std::memset(xt[i], 0, sizeof(xt[i]));
        std::memcpy(xt[i], x + i * c.ldx + k, n_tail * sizeof(XT));
        xp[i] = xt[i];
      }
    }
    __m256 w0[NR], w1[NR];
    for (int j = 0; j < NR; ++j) {
      w0[j] = LoadF32x8<kWeightBf16>(wp[j]);
      w1[j] = LoadF32x8<kWeightBf16>(wp[j] + 8);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256 x0 = LoadF32x8<kActBf16>(xp[i]), x1 = LoadF32x8<kActBf16>(xp[i] + 8);
      for (int j = 0; j < NR; ++j) {
        lo[i][j] = _mm256_fmadd_ps(x0, w0[j], lo[i][j]);
        hi[i][j] = _mm256_fmadd_ps(x1, w1[j], hi[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) StoreDenseOut(c, m0 + i, n0 + j, ReduceTree(lo[i][j], hi[i][j]));
}

using TileFn = void (*)(const DenseGemmCall&, int64_t, int64_t, unsigned);

void RunTiles(const DenseGemmCall& c, int64_t n_begin, int64_t n_end,
              const TileFn (&table)[kTile][kTile]) {
  const unsigned csr = _mm_getcsr();
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kTile) {
    const int nr = static_cast<int>(std::min<int64_t>(kTile, n_end - n0));
    for (int64_t m0 = 0; m0 < c.n_rows; m0 += kTile) {
      const int mr = static_cast<int>(std::min<int64_t>(kTile, c.n_rows - m0));
      table[mr - 1][nr - 1](c, m0, n0, csr);
    }
  }
}

constexpr TileFn kBf16[kTile][kTile] = {{TileBf16<1, 1>, TileBf16<1, 2>},
                                        {TileBf16<2, 1>, TileBf16<2, 2>}};
// fp32 tiles by (weight, activation) storage: fp32 or bf16 each.
template <bool kWeightBf16, bool kActBf16>
constexpr TileFn kF32[kTile][kTile] = {
    {TileF32<kWeightBf16, kActBf16, 1, 1>, TileF32<kWeightBf16, kActBf16, 1, 2>},
    {TileF32<kWeightBf16, kActBf16, 2, 1>, TileF32<kWeightBf16, kActBf16, 2, 2>}};

}  // namespace

void GemmBf16RowsAvx2(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  RunTiles(c, n_begin, n_end, kBf16);
}

void GemmF32RowsAvx2(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  const bool w_bf16 = c.w_dtype == DType::kBF16, x_bf16 = c.x_dtype == DType::kBF16;
  if (w_bf16 && x_bf16) {
    RunTiles(c, n_begin, n_end, kF32<true, true>);
  } else if (w_bf16) {
    RunTiles(c, n_begin, n_end, kF32<true, false>);
  } else if (x_bf16) {
    RunTiles(c, n_begin, n_end, kF32<false, true>);
  } else {
    RunTiles(c, n_begin, n_end, kF32<false, false>);
  }
}

}  // namespace deepinfer::kernels
