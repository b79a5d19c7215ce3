// AVX2 indexer scoring, bit-identical to IndexScoreRef (index_score.h gives the rounding points
// and the head-sum order). Heads across lanes (8 per ymm; the reference's 16-lane head sum is two
// ymm, heads 16g..16g+7 and 16g+8..16g+15), keys in tiles of 12 widened once to fp32 and shared by
// every head vector, so each FMA's broadcast operand is a vbroadcastss from L1.
// The per-(head, key) dot is the vdpbf16ps pair order as two FMAs per pair, odd element first,
// with MXCSR.DAZ|FTZ standing in for the instruction's flushing (sparse_attn_avx2.cc explains the
// one corner where x86's after-rounding tininess differs); the bf16 roundings, relu, weights and
// head sums run with the caller's MXCSR.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_avx2.h"
#include "kernels/cpu/index_score.h"

// Keep every mul and add a separate rounding, as in the scalar reference (GCC contracts by
// default).
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::kernels {

namespace {

constexpr int kKeyTile = 12;
constexpr int64_t kKeyChunk = 512;  // keys per parallel work item
constexpr unsigned kFtzDaz = 0x8040;

struct RowPack {
  int vecs = 0;  // head vectors of 8 lanes, an even number (16-head groups)
  int dim = 0;
  std::vector<float> qf;    // [vecs][dim][8] q as fp32, zero padded
  std::vector<float> w;     // [vecs][8] head weights as fp32, zero padded
  std::vector<float> kf;    // [kKeyTile][dim] the tile's keys as fp32
  std::vector<float> dots;  // [kKeyTile][vecs][8] raw dots of a tile
};

void PackRow(const IndexScoreParams& p, int64_t r, RowPack* pack) {
  pack->vecs = 2 * ((p.n_heads + 15) / 16);
  pack->dim = p.head_dim;
  pack->qf.assign(static_cast<size_t>(pack->vecs) * p.head_dim * 8, 0.0f);
  pack->w.assign(static_cast<size_t>(pack->vecs) * 8, 0.0f);
  pack->kf.resize(static_cast<size_t>(kKeyTile) * p.head_dim);
  pack->dots.resize(static_cast<size_t>(kKeyTile) * pack->vecs * 8);
  const uint16_t* q = p.q + r * p.q_row_stride;
  const uint16_t* w = p.w + r * p.w_row_stride;
  for (int h = 0; h < p.n_heads; ++h) {
    const int v = h / 8, l = h % 8;
    float* dst = pack->qf.data() + static_cast<size_t>(v) * p.head_dim * 8 + l;
    for (int c = 0; c < p.head_dim; ++c) dst[c * 8] = Bf16ToFloat(q[h * p.head_dim + c]);
    pack->w[v * 8 + l] = Bf16ToFloat(w[h]);
  }
}

// dots[j][v] for KT keys (already widened in pack.kf) and head vector v.
template <int KT>
inline void DotTile(const RowPack& pack, int v, float* dots) {
  const int d = pack.dim;
  const float* qv = pack.qf.data() + static_cast<size_t>(v) * d * 8;
  __m256 acc[KT];
  for (int j = 0; j < KT; ++j) acc[j] = _mm256_setzero_ps();
  for (int c0 = 0; c0 < d; c0 += 2) {
    for (int k = 1; k >= 0; --k) {
      const int c = c0 + k;
      const __m256 qc = _mm256_loadu_ps(qv + c * 8);
      for (int j = 0; j < KT; ++j) {
        acc[j] = _mm256_fmadd_ps(qc, _mm256_broadcast_ss(pack.kf.data() + j * d + c), acc[j]);
      }
    }
  }
  for (int j = 0; j < KT; ++j) _mm256_storeu_ps(dots + (j * pack.vecs + v) * 8, acc[j]);
}

inline float FoldLanes(__m256 a, __m256 b) {
  const __m256 s8 = _mm256_add_ps(a, b);  // lane j += lane j + 8
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <int KT>
void ScoreTile(RowPack& pack, const uint16_t* const* keys, float* out) {
  const int d = pack.dim;
  for (int j = 0; j < KT; ++j) {
    float* dst = pack.kf.data() + j * d;
    for (int c = 0; c < d; c += 8) _mm256_storeu_ps(dst + c, LoadBf16x8(keys[j] + c));
  }
  float* dots = pack.dots.data();
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | kFtzDaz);
  for (int v = 0; v < pack.vecs; ++v) DotTile<KT>(pack, v, dots);
  _mm_setcsr(csr);
  for (int j = 0; j < KT; ++j) {
    __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int v = 0; v < pack.vecs; ++v) {
      const __m256 dot = RoundToBf16x8(_mm256_loadu_ps(dots + (j * pack.vecs + v) * 8));
      const __m256 relu = _mm256_max_ps(dot, _mm256_setzero_ps());
      const __m256 prod =
          RoundToBf16x8(_mm256_mul_ps(relu, _mm256_loadu_ps(pack.w.data() + v * 8)));
      sum[v & 1] = _mm256_add_ps(sum[v & 1], prod);
    }
    out[j] = Bf16ToFloat(FloatToBf16(FoldLanes(sum[0], sum[1])));
  }
}

void ScoreRange(const IndexScoreParams& p, RowPack& pack, int64_t r, int64_t t0, int64_t t1) {
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

void IndexScoreAvx2(const IndexScoreParams& p, ThreadPool* pool) {
  CHECK(p.head_dim % 8 == 0) << "IndexScoreAvx2: head_dim must be a multiple of 8, got "
                             << p.head_dim;
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
