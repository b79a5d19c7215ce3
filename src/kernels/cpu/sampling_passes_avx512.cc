// AVX-512 twins of the scalar passes in sampling_kernels.cc (bit-identical results).
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/exp_f32_avx512.h"
#include "kernels/cpu/sampling_passes.h"

namespace deepinfer::kernels::sampling_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

inline __mmask16 TailMask(int64_t remaining) {
  return remaining >= 16 ? __mmask16{0xFFFF}
                         : static_cast<__mmask16>((1u << static_cast<unsigned>(remaining)) - 1u);
}

void MaskedCopyAvx512(const MaskedCopyParams& p) {
  const float* src = p.src;
  const uint32_t* allowed_bits = p.allowed_bits;
  const int64_t n = p.n;
  float* dst = p.dst;
  const __m512 neg_inf = _mm512_set1_ps(kNegInf);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 tail = TailMask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(tail, src + i);
    __mmask16 keep = tail;
    if (allowed_bits != nullptr) {
      // i is a multiple of 16, so its 16 bits sit inside one 32-bit word.
      keep &= static_cast<__mmask16>(allowed_bits[i >> 5] >> (i & 31));
    }
    _mm512_mask_storeu_ps(dst + i, tail, _mm512_mask_blend_ps(keep, neg_inf, v));
  }
}

MaxScanResult ScanMaxAvx512(const float* x, int64_t n) {
  __m512 best = _mm512_set1_ps(kNegInf);
  __mmask16 bad = 0;
  const __m512 pos_inf = _mm512_set1_ps(kPosInf);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 tail = TailMask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), tail, x + i);
    bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v, pos_inf, _CMP_EQ_OQ);
    best = _mm512_max_ps(best, v);
  }
  return {_mm512_reduce_max_ps(best), bad != 0};
}

int64_t FirstIndexOfAvx512(const float* x, int64_t n, float value) {
  const __m512 target = _mm512_set1_ps(value);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 tail = TailMask(n - i);
    const __mmask16 hit =
        _mm512_mask_cmp_ps_mask(tail, _mm512_maskz_loadu_ps(tail, x + i), target, _CMP_EQ_OQ);
    if (hit != 0) return i + __builtin_ctz(hit);
  }
  return n;
}

void ExpScanAvx512(const ExpScanParams& p) {
  float* x = p.x;
  const int64_t n = p.n;
  const __m512 vshift = _mm512_set1_ps(p.shift);
  const __m512 vscale = _mm512_set1_ps(p.scale);
  __m512 sum = _mm512_setzero_ps();
  __m512 mass[kExpLevels];
  __m512 threshold[kExpLevels];
  __m512i count[kExpLevels];  // per-lane counts (exact, so any reduction order is fine)
  for (int j = 0; j < kExpLevels; ++j) {
    mass[j] = _mm512_setzero_ps();
    count[j] = _mm512_setzero_si512();
    threshold[j] = _mm512_set1_ps(kLevelThreshold[j]);
  }
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 tail = TailMask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(tail, x + i);
    const __m512 e = kernels::ExpF32x16(_mm512_mul_ps(_mm512_sub_ps(v, vshift), vscale));
    _mm512_mask_storeu_ps(x + i, tail, e);
    sum = _mm512_mask_add_ps(sum, tail, sum, e);
    for (int j = 0; j < kExpLevels; ++j) {
      const __mmask16 above = _mm512_mask_cmp_ps_mask(tail, e, threshold[j], _CMP_GE_OQ);
      mass[j] = _mm512_mask_add_ps(mass[j], above, mass[j], e);
      count[j] = _mm512_mask_sub_epi32(count[j], above, count[j], _mm512_set1_epi32(-1));
    }
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  p.stats->sum = ReduceLanes(lanes);
  for (int j = 0; j < kExpLevels; ++j) {
    _mm512_store_ps(lanes, mass[j]);
    p.stats->level_mass[j] = ReduceLanes(lanes);
    p.stats->level_count[j] = _mm512_reduce_add_epi32(count[j]);
  }
}

int64_t CompactAtLeastAvx512(const CompactParams& p) {
  const float* e = p.e;
  const int64_t n = p.n;
  const __m512 vthreshold = _mm512_set1_ps(p.threshold);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  int64_t m = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 tail = TailMask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(tail, e + i);
    const __mmask16 keep = _mm512_mask_cmp_ps_mask(tail, v, vthreshold, _CMP_GE_OQ);
    // Register compress + full store (compress-to-memory is slow on Zen 4); the caller's
    // buffers have 16 entries of slack.
    _mm512_storeu_ps(p.vals + m, _mm512_maskz_compress_ps(keep, v));
    _mm512_storeu_si512(p.ids + m, _mm512_maskz_compress_epi32(keep, index));
    m += __builtin_popcount(keep);
    index = _mm512_add_epi32(index, step);
  }
  return m;
}

}  // namespace

const SamplingKernels kAvx512SamplingKernels = {MaskedCopyAvx512, ScanMaxAvx512, FirstIndexOfAvx512,
                                                ExpScanAvx512, CompactAtLeastAvx512};

}  // namespace deepinfer::kernels::sampling_internal
