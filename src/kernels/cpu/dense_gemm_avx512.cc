// AVX-512 bf16 (vdpbf16ps) and fp32 (FMA) lane-partial GEMM tiles; the order is documented in
// gemm_bf16.h / gemm_f32.h: one zmm accumulator per output holds the 16 lane partials, and each
// output is reduced by the fixed tree at the end, so tile shape never changes a result.
#include <immintrin.h>

#include <algorithm>

#include "core/cpu_features.h"
#include "kernels/cpu/dense_gemm_internal.h"
#include "kernels/cpu/store_out_avx512.h"

namespace deepinfer::kernels {

namespace {

constexpr int kMaxTile = 4;        // up to 4 activation rows × 4 weight rows per tile
constexpr int64_t kRowBlock = 64;  // activation rows per pass over a weight tile (L2 reuse)

// The tree of ReduceLanes16 on one register.
inline float ReduceTree(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// ReduceTree of four registers at once, the same adds on the same operands in the same order
// (so the same bits), with the registers' halves, quarters and pairs side by side in shuffles:
// lane j of the result is the tree of a[j]. A scalar tree per output costs about as much as the
// dot products themselves when K is a few hundred (a narrow model's head).
inline __m128 ReduceTree4(const __m512 (&a)[4]) {
  // s8[l] = P[l] + P[l+8]: quarters (0, 1) + (2, 3) of two registers per add.
  const __m512 b01 = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 b23 = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // s4[l] = s8[l] + s8[l+4]: quarter j holds register j's s4.
  const __m512 c = _mm512_add_ps(_mm512_shuffle_f32x4(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
  // s2[l] = s4[l] + s4[l+2], then s2[0] + s2[1], in lane 0 of each quarter.
  const __m512 d = _mm512_add_ps(c, _mm512_shuffle_ps(c, c, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 e = _mm512_add_ps(d, _mm512_shuffle_ps(d, d, _MM_SHUFFLE(1, 1, 1, 1)));
  const __m512i first_lanes = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(first_lanes, e));
}

template <int MR, int NR>
void StoreTile(const DenseGemmCall& c, int64_t m0, int64_t n0, const __m512 (&acc)[MR][NR]) {
  if constexpr (NR == 4) {
    for (int i = 0; i < MR; ++i) {
      avx512::StoreOut(_mm512_zextps128_ps512(ReduceTree4(acc[i])), 0xF, c.out,
                       (m0 + i) * c.ldo + n0, c.out_dtype);
    }
  } else {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NR; ++j) StoreDenseOut(c, m0 + i, n0 + j, ReduceTree(acc[i][j]));
    }
  }
}

template <int MR, int NR>
void TileBf16(const DenseGemmCall& c, int64_t m0, int64_t n0) {
  const auto* w = static_cast<const uint16_t*>(c.w) + n0 * c.ldw;
  const auto* x = static_cast<const uint16_t*>(c.x) + m0 * c.ldx;
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  // Software prefetch kPrefetchK elements ahead in every weight row into L1; near the end of the
  // rows, the same offset into the rows of the next tile (weight streams dominate the M = 1 GEMV).
  // Where StreamPrefetchStyle() is the spread form (core/cpu_features.h), also kL2PrefetchK ahead
  // into L2: an L2 prefetch holds no L1 fill buffer, so more lines are in flight (Intel host:
  // 94-95% -> 100% of the paired read, performance.md). AMD hosts keep the L1 prefetch alone.
  constexpr int64_t kPrefetchK = 2048;
  constexpr int64_t kL2PrefetchK = 8192;
  const bool l2 = StreamPrefetchStyle() == StreamPrefetch::kSpread;
  const auto* w_next = w + NR * c.ldw;
  auto ahead_of = [&](int j, int64_t ahead) {
    return ahead < c.k ? w + j * c.ldw + ahead : w_next + j * c.ldw + (ahead - c.k);
  };
  int64_t k = 0;
  for (; k + 32 <= c.k; k += 32) {  // lane l = k-pair k/2 + l
    for (int j = 0; j < NR; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead_of(j, k + kPrefetchK)), _MM_HINT_T0);
    }
    for (int j = 0; l2 && j < NR; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead_of(j, k + kL2PrefetchK)), _MM_HINT_T1);
    }
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(w + j * c.ldw + k);
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + i * c.ldx + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[j], xv);
    }
  }
  if (k < c.k) {  // zero-padded tail
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (c.k - k)) - 1);
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j)
      wv[j] = (__m512bh)_mm512_maskz_loadu_epi16(mask, w + j * c.ldw + k);
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(mask, x + i * c.ldx + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[j], xv);
    }
  }
  StoreTile<MR, NR>(c, m0, n0, acc);
}

// 16 elements at `offset` (mask: the valid lanes; the others read as +0) as fp32; bf16 elements
// are widened exactly.
template <bool kBf16>
inline __m512 LoadF32(const void* p, int64_t offset, __mmask16 mask) {
  if constexpr (kBf16) {
    const __m256i b = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(p) + offset);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  } else {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(p) + offset);
  }
}

template <bool kWeightBf16, bool kActBf16, int MR, int NR>
void TileF32(const DenseGemmCall& c, int64_t m0, int64_t n0) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  // Where the call reads its weights once (a row tile or less: the hc mixes of a decode row stream
  // 24 fp32 rows of 80 KB), the weight rows' prefetch as in TileBf16, in bytes: L1 4 KiB ahead,
  // L2 16 KiB ahead where the spread form applies. More rows reuse the tile from L2 (no prefetch).
  // A local lambda in each tile on purpose: moved into a shared helper (a function or a class),
  // GCC 12 dropped every prefetch from both tiles (none left in the object; the head GEMV 40%
  // slower).
  constexpr int64_t kWordBytes = kWeightBf16 ? 2 : 4;
  constexpr int64_t kPrefetchBytes = 4096, kL2PrefetchBytes = 16384;
  const bool stream = c.n_rows <= kMaxTile;
  const bool l2 = stream && StreamPrefetchStyle() == StreamPrefetch::kSpread;
  const char* w_rows = static_cast<const char*>(c.w) + n0 * c.ldw * kWordBytes;
  const int64_t row_bytes = c.ldw * kWordBytes, k_bytes = c.k * kWordBytes;
  auto ahead_of = [&](int j, int64_t ahead) {  // past the row's end: the next tile's row j
    return ahead < k_bytes ? w_rows + j * row_bytes + ahead
                           : w_rows + (NR + j) * row_bytes + (ahead - k_bytes);
  };
  for (int64_t k = 0; k < c.k; k += 16) {  // lane l = element k + l
    const __mmask16 mask = avx512::TailMask(c.k - k);
    if (stream && (k * kWordBytes) % 64 == 0) {  // once per 64-byte line of each weight row
      for (int j = 0; j < NR; ++j)
        _mm_prefetch(ahead_of(j, k * kWordBytes + kPrefetchBytes), _MM_HINT_T0);
      for (int j = 0; l2 && j < NR; ++j) {
        _mm_prefetch(ahead_of(j, k * kWordBytes + kL2PrefetchBytes), _MM_HINT_T1);
      }
    }
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = LoadF32<kWeightBf16>(c.w, (n0 + j) * c.ldw + k, mask);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = LoadF32<kActBf16>(c.x, (m0 + i) * c.ldx + k, mask);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  StoreTile<MR, NR>(c, m0, n0, acc);
}

using TileFn = void (*)(const DenseGemmCall&, int64_t, int64_t);

template <template <int, int> class Tiles>
constexpr TileFn kTable[kMaxTile][kMaxTile] = {
    {Tiles<1, 1>::fn, Tiles<1, 2>::fn, Tiles<1, 3>::fn, Tiles<1, 4>::fn},
    {Tiles<2, 1>::fn, Tiles<2, 2>::fn, Tiles<2, 3>::fn, Tiles<2, 4>::fn},
    {Tiles<3, 1>::fn, Tiles<3, 2>::fn, Tiles<3, 3>::fn, Tiles<3, 4>::fn},
    {Tiles<4, 1>::fn, Tiles<4, 2>::fn, Tiles<4, 3>::fn, Tiles<4, 4>::fn}};

template <int MR, int NR>
struct Bf16Tiles {
  static constexpr TileFn fn = TileBf16<MR, NR>;
};
// fp32 tiles by (weight, activation) storage: fp32 or bf16 each.
template <bool kWeightBf16, bool kActBf16>
struct F32TilesOf {
  template <int MR, int NR>
  struct Tiles {
    static constexpr TileFn fn = TileF32<kWeightBf16, kActBf16, MR, NR>;
  };
};

// Weight tiles outer (kept in cache) over blocks of activation rows.
void RunTiles(const DenseGemmCall& c, int64_t n_begin, int64_t n_end,
              const TileFn (&table)[kMaxTile][kMaxTile]) {
  for (int64_t mb = 0; mb < c.n_rows; mb += kRowBlock) {
    const int64_t mb_end = std::min(c.n_rows, mb + kRowBlock);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += kMaxTile) {
      const int nr = static_cast<int>(std::min<int64_t>(kMaxTile, n_end - n0));
      for (int64_t m0 = mb; m0 < mb_end; m0 += kMaxTile) {
        const int mr = static_cast<int>(std::min<int64_t>(kMaxTile, mb_end - m0));
        table[mr - 1][nr - 1](c, m0, n0);
      }
    }
  }
}

}  // namespace

void GemmBf16RowsAvx512(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  RunTiles(c, n_begin, n_end, kTable<Bf16Tiles>);
}

void GemmF32RowsAvx512(const DenseGemmCall& c, int64_t n_begin, int64_t n_end) {
  const bool w_bf16 = c.w_dtype == DType::kBF16, x_bf16 = c.x_dtype == DType::kBF16;
  if (w_bf16 && x_bf16) {
    RunTiles(c, n_begin, n_end, kTable<F32TilesOf<true, true>::Tiles>);
  } else if (w_bf16) {
    RunTiles(c, n_begin, n_end, kTable<F32TilesOf<true, false>::Tiles>);
  } else if (x_bf16) {
    RunTiles(c, n_begin, n_end, kTable<F32TilesOf<false, true>::Tiles>);
  } else {
    RunTiles(c, n_begin, n_end, kTable<F32TilesOf<false, false>::Tiles>);
  }
}

}  // namespace deepinfer::kernels
