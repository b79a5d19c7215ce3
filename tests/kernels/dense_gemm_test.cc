// bf16 and fp32 lane-partial GEMMs: every CPU level bit-identical to the scalar reference
// (including subnormal inputs that exercise vdpbf16ps's DAZ/FTZ), the reference against a float64
// product, batch / thread invariance and strided operands.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_f32.h"
#include "level_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::AvailableLevels;
using test_util::OutputBits;

// N(0, 1) values; with `tiny`, one in 7 is a bf16 subnormal or a value whose products underflow.
std::vector<float> RandomFloats(int64_t n, uint32_t seed, bool tiny = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = RoundToBf16(nd(rng));
    if (tiny && i % 7 == 3) v[i] *= 0x1p-128f;  // bf16 subnormal range
    if (tiny && i % 7 == 5) v[i] *= 0x1p-64f;   // products near 2^-126
  }
  return v;
}

std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = FloatToBf16(v[i]);
  return b;
}

size_t OutBytes(int64_t m, int64_t n, DType dt) { return m * n * (dt == DType::kF32 ? 4 : 2); }

TEST(GemmBf16, ReferenceMatchesFloat64) {
  const int64_t n = 9, k = 777, m = 3;
  const auto wf = RandomFloats(n * k, 1), xf = RandomFloats(m * k, 2);
  const auto w = ToBf16(wf), x = ToBf16(xf);
  std::vector<float> out(m * n);
  GemmBf16Ref(w.data(), n, k, k, x.data(), m, k, out.data(), DType::kF32, n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0.0, mag = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += static_cast<double>(xf[i * k + kk]) * wf[r * k + kk];
        mag += std::fabs(static_cast<double>(xf[i * k + kk]) * wf[r * k + kk]);
      }
      EXPECT_NEAR(out[i * n + r], sum, 4e-6 * mag);  // ~k/16 + 4 roundings of 2^-24
    }
  }
}

TEST(GemmBf16, AllLevelsBitIdenticalToReference) {
  ThreadPool pool2(2);
  for (bool tiny : {false, true}) {
    // n: the AVX-512 kernel reduces 16 outputs at a time (full groups, a group of 15 made of
    // three 4-row tiles and one of 3, and of 1).
    for (int64_t n : {1, 5, 16, 33, 47}) {
      // k 600: three K blocks of the batched (m >= 8) tiles, the last with a tail; m 31: a second
      // row block of them; m 67: a second block of 64 activation rows.
      for (int64_t k : {1, 2, 31, 32, 33, 64, 100, 290, 600}) {
        const auto w = ToBf16(RandomFloats(n * k, static_cast<uint32_t>(n * 31 + k), tiny));
        for (int64_t m : {1, 2, 3, 5, 8, 9, 31, 67}) {
          const auto x = ToBf16(RandomFloats(m * k, static_cast<uint32_t>(m * 7 + k), tiny));
          for (DType dt : {DType::kF32, DType::kBF16}) {
            std::vector<uint8_t> want(OutBytes(m, n, dt));
            GemmBf16Ref(w.data(), n, k, k, x.data(), m, k, want.data(), dt, n);
            for (CpuLevel level : AvailableLevels()) {
              for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
                std::vector<uint8_t> got(OutBytes(m, n, dt), 0xCD);
                GemmBf16At(level, w.data(), n, k, k, x.data(), m, k, got.data(), dt, n, pool);
                ASSERT_EQ(OutputBits(got, dt), OutputBits(want, dt))
                    << CpuLevelName(level) << " n " << n << " k " << k << " m " << m << " tiny "
                    << tiny;
              }
            }
          }
        }
      }
    }
  }
}

// Issue 27's batch invariance for the bf16 GEMM (the head), row count by row count: every M in
// 1..64 (the GEMV tiles, the batched tiles from 8 rows, the row split) on every level, without a
// pool and with two threads; a call's rows (at an offset that moves with M) get the reference's
// bits for them in a 64-row batch.
TEST(GemmBf16, EveryRowCountOneToSixtyFourOnEveryLevel) {
  const int64_t n = 53, k = 300, rows = 64;
  const auto w = ToBf16(RandomFloats(n * k, 95));
  const auto x = ToBf16(RandomFloats(rows * k, 96));
  ThreadPool pool2(2);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    std::vector<uint8_t> ref(OutBytes(rows, n, dt));
    GemmBf16Ref(w.data(), n, k, k, x.data(), rows, k, ref.data(), dt, n);
    const size_t row_bytes = OutBytes(1, n, dt);
    for (CpuLevel level : AvailableLevels()) {
      for (int64_t m = 1; m <= rows; ++m) {
        const int64_t r0 = (m * 5) % (rows - m + 1);
        const std::vector<uint8_t> want(ref.begin() + r0 * row_bytes,
                                        ref.begin() + (r0 + m) * row_bytes);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
          std::vector<uint8_t> got(OutBytes(m, n, dt), 0xCD);
          GemmBf16At(level, w.data(), n, k, k, x.data() + r0 * k, m, k, got.data(), dt, n, pool);
          ASSERT_EQ(OutputBits(got, dt), OutputBits(want, dt))
              << CpuLevelName(level) << " m " << m << " r0 " << r0 << (pool ? " pool" : "");
        }
      }
    }
  }
}

// The reference's subnormal rules are those of the instruction (probed on Zen 5): a result that
// only a non-flushing, unfused evaluation would give differs here.
TEST(GemmBf16, FollowsDazFtzAndFusedSteps) {
  // One pair: odd 2^-64 · 2^-62 = 2^-126 first, then fma(-2^-64, 2^-63, 2^-126) = 2^-127, a
  // subnormal that is flushed to +0. Without FTZ the result would be 2^-127.
  const uint16_t w[2] = {FloatToBf16(-0x1p-64f), FloatToBf16(0x1p-64f)};
  const uint16_t x[2] = {FloatToBf16(0x1p-63f), FloatToBf16(0x1p-62f)};
  for (CpuLevel level : AvailableLevels()) {
    float out = -1.0f;
    GemmBf16At(level, w, 1, 2, 2, x, 1, 2, &out, DType::kF32, 1, nullptr);
    EXPECT_EQ(std::bit_cast<uint32_t>(out), 0u) << CpuLevelName(level);
  }
}

TEST(GemmF32, ReferenceMatchesFloat64) {
  const int64_t n = 7, k = 1001, m = 2;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(n * k), x(m * k);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  std::vector<float> out(m * n);
  GemmF32Ref(w.data(), DType::kF32, n, k, k, x.data(), DType::kF32, m, k, out.data(), DType::kF32,
             n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0.0, mag = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += static_cast<double>(x[i * k + kk]) * w[r * k + kk];
        mag += std::fabs(static_cast<double>(x[i * k + kk]) * w[r * k + kk]);
      }
      EXPECT_NEAR(out[i * n + r], sum, 8e-6 * mag);
    }
  }
}

TEST(GemmF32, AllLevelsBitIdenticalToReference) {
  ThreadPool pool2(2);
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {1, 3, 17}) {
    for (int64_t k : {1, 15, 16, 17, 100, 259}) {
      std::vector<float> wf(n * k);
      for (size_t i = 0; i < wf.size(); ++i) wf[i] = i % 11 == 4 ? nd(rng) * 1e-39f : nd(rng);
      const std::vector<uint16_t> wb = ToBf16(wf);
      std::vector<float> wb_f32(wb.size());  // the same bf16 values stored as fp32
      for (size_t i = 0; i < wb.size(); ++i) wb_f32[i] = Bf16ToFloat(wb[i]);
      for (int64_t m : {1, 2, 5}) {
        std::vector<float> x(m * k);
        for (auto& v : x) v = nd(rng);
        for (DType dt : {DType::kF32, DType::kBF16}) {
          std::vector<uint8_t> want(OutBytes(m, n, dt)), want_b(OutBytes(m, n, dt));
          GemmF32Ref(wf.data(), DType::kF32, n, k, k, x.data(), DType::kF32, m, k, want.data(), dt,
                     n);
          GemmF32Ref(wb.data(), DType::kBF16, n, k, k, x.data(), DType::kF32, m, k, want_b.data(),
                     dt, n);
          std::vector<uint8_t> want_bf(OutBytes(m, n, dt));
          GemmF32Ref(wb_f32.data(), DType::kF32, n, k, k, x.data(), DType::kF32, m, k,
                     want_bf.data(), dt, n);
          EXPECT_EQ(want_b, want_bf) << "bf16 storage must equal its fp32 widening";
          for (CpuLevel level : AvailableLevels()) {
            for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
              std::vector<uint8_t> got(OutBytes(m, n, dt), 0xCD), got_b(OutBytes(m, n, dt));
              GemmF32At(level, wf.data(), DType::kF32, n, k, k, x.data(), DType::kF32, m, k,
                        got.data(), dt, n, pool);
              GemmF32At(level, wb.data(), DType::kBF16, n, k, k, x.data(), DType::kF32, m, k,
                        got_b.data(), dt, n, pool);
              ASSERT_EQ(OutputBits(got, dt), OutputBits(want, dt)) << CpuLevelName(level);
              ASSERT_EQ(OutputBits(got_b, dt), OutputBits(want_b, dt)) << CpuLevelName(level);
            }
          }
        }
      }
    }
  }
}

// Row i of a 70-row batch (more than one 64-row block) equals the single-row call; 1 or 2 threads;
// strided operands (a sub-matrix view, as for wo_a's per-group slices).
TEST(DenseGemm, BatchThreadAndStrideInvariance) {
  const int64_t n = 45, k = 300, m = 70, ldw = k + 8, ldx = k + 40, ldo = n + 3;
  const auto wb = ToBf16(RandomFloats(n * ldw, 5)), xb = ToBf16(RandomFloats(m * ldx, 6));
  std::vector<float> xf(m * ldx);
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = Bf16ToFloat(xb[i]) * 0.37f;
  ThreadPool pool1(1), pool2(2);
  for (CpuLevel level : AvailableLevels()) {
    std::vector<float> all_b(m * ldo), all_f(m * ldo);
    GemmBf16At(level, wb.data(), n, k, ldw, xb.data(), m, ldx, all_b.data(), DType::kF32, ldo,
               &pool2);
    GemmF32At(level, wb.data(), DType::kBF16, n, k, ldw, xf.data(), DType::kF32, m, ldx,
              all_f.data(), DType::kF32, ldo, &pool2);
    for (ThreadPool* pool : {&pool1, &pool2}) {
      for (int64_t i : {0, 1, 63, 64, 69}) {
        std::vector<float> one_b(n), one_f(n);
        GemmBf16At(level, wb.data(), n, k, ldw, xb.data() + i * ldx, 1, ldx, one_b.data(),
                   DType::kF32, n, pool);
        GemmF32At(level, wb.data(), DType::kBF16, n, k, ldw, xf.data() + i * ldx, DType::kF32, 1,
                  ldx, one_f.data(), DType::kF32, n, pool);
        EXPECT_EQ(0, std::memcmp(one_b.data(), all_b.data() + i * ldo, n * 4)) << i;
        EXPECT_EQ(0, std::memcmp(one_f.data(), all_f.data() + i * ldo, n * 4)) << i;
      }
    }
  }
}

// Few outputs and many rows (the hc mixes: N = 24) split the rows over the pool instead of N:
// the same bits as the single-thread reference, for both output types and strided rows.
TEST(DenseGemm, RowSplitMatchesReference) {
  const int64_t n = 24, k = 1000, m = 37, ldx = k + 16, ldo = n + 5;
  const auto wb = ToBf16(RandomFloats(n * k, 7)), xb = ToBf16(RandomFloats(m * ldx, 8));
  std::vector<float> xf(m * ldx);
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = Bf16ToFloat(xb[i]) * 1.7f;
  ThreadPool pool2(2);
  for (CpuLevel level : AvailableLevels()) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      const size_t es = dt == DType::kF32 ? 4 : 2;
      std::vector<uint8_t> want(m * ldo * es, 0xCD), got(m * ldo * es, 0xCD);
      GemmBf16Ref(wb.data(), n, k, k, xb.data(), m, ldx, want.data(), dt, ldo);
      GemmBf16At(level, wb.data(), n, k, k, xb.data(), m, ldx, got.data(), dt, ldo, &pool2);
      EXPECT_EQ(got, want) << CpuLevelName(level) << " bf16 GEMM, bf16 out " << (es == 2);
      std::fill(want.begin(), want.end(), 0xCD);
      std::fill(got.begin(), got.end(), 0xCD);
      GemmF32Ref(wb.data(), DType::kBF16, n, k, k, xf.data(), DType::kF32, m, ldx, want.data(), dt,
                 ldo);
      GemmF32At(level, wb.data(), DType::kBF16, n, k, k, xf.data(), DType::kF32, m, ldx, got.data(),
                dt, ldo, &pool2);
      EXPECT_EQ(got, want) << CpuLevelName(level) << " fp32 GEMM, bf16 out " << (es == 2);
    }
  }
}

// bf16 activations (the hc mixes read the bf16 stream directly): every level, 1 or 2 threads,
// strided rows, K tails and subnormal / signed-zero inputs give the bits of the fp32 call on the
// exactly widened activations.
TEST(GemmF32, Bf16ActivationsEqualWidenedFp32) {
  ThreadPool pool2(2);
  for (int64_t k : {1, 15, 16, 33, 1000}) {
    for (int64_t m : {1, 5, 70}) {
      const int64_t n = 24, ldx = k + 16, ldo = n + 3;
      std::vector<float> xs = RandomFloats(m * ldx, static_cast<uint32_t>(9 + k));
      for (size_t i = 0; i < xs.size(); i += 13) xs[i] *= 1e-39f;  // subnormal after rounding
      for (size_t i = 5; i < xs.size(); i += 29) xs[i] = -0.0f;
      const auto xb = ToBf16(xs);
      std::vector<float> xf(xb.size());
      for (size_t i = 0; i < xb.size(); ++i) xf[i] = Bf16ToFloat(xb[i]);
      const std::vector<float> w = RandomFloats(n * k, static_cast<uint32_t>(10 + k));
      for (DType dt : {DType::kF32, DType::kBF16}) {
        const size_t es = dt == DType::kF32 ? 4 : 2;
        std::vector<uint8_t> want(m * ldo * es, 0xCD);
        GemmF32Ref(w.data(), DType::kF32, n, k, k, xf.data(), DType::kF32, m, ldx, want.data(), dt,
                   ldo);
        std::vector<uint8_t> ref_b(m * ldo * es, 0xCD);
        GemmF32Ref(w.data(), DType::kF32, n, k, k, xb.data(), DType::kBF16, m, ldx, ref_b.data(),
                   dt, ldo);
        ASSERT_EQ(ref_b, want) << "reference, k " << k << " m " << m;
        for (CpuLevel level : AvailableLevels()) {
          for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
            std::vector<uint8_t> got(m * ldo * es, 0xCD);
            GemmF32At(level, w.data(), DType::kF32, n, k, k, xb.data(), DType::kBF16, m, ldx,
                      got.data(), dt, ldo, pool);
            ASSERT_EQ(got, want) << CpuLevelName(level) << " k " << k << " m " << m;
          }
        }
      }
    }
  }
  // The public overload dispatches to the active level with the same bits.
  const int64_t n = 24, k = 100, m = 9;
  const auto xb = ToBf16(RandomFloats(m * k, 11));
  const std::vector<float> w = RandomFloats(n * k, 12);
  std::vector<float> want(m * n), got(m * n);
  GemmF32Ref(w.data(), DType::kF32, n, k, k, xb.data(), DType::kBF16, m, k, want.data(),
             DType::kF32, n);
  GemmF32(w.data(), DType::kF32, n, k, k, xb.data(), m, k, got.data(), DType::kF32, n, &pool2);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4));
}

}  // namespace
}  // namespace deepinfer::kernels
