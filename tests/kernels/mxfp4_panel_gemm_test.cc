// MXFP4 panel GEMM (the AVX-512 many-row path): bit for bit against the scalar reference on the
// checkpoint layout, for tile/unit tails, strided rows, extreme scales, one and two threads, and
// through the public entry point at the row counts that select it; Mxfp4GemmMany per job.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "kernels/cpu/mxfp4_gemm_kernels.h"
#include "level_test_util.h"
#include "mxfp4_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::Mxfp4Weights;
// Raw bits of out rows [m][ldo] (4 or 2 bytes per element).
std::vector<uint32_t> Bits(const std::vector<uint8_t>& buf, DType dt) {
  const size_t es = dt == DType::kF32 ? 4 : 2;
  std::vector<uint32_t> bits;
  for (size_t i = 0; i + es <= buf.size(); i += es) {
    uint32_t v = 0;
    std::memcpy(&v, buf.data() + i, es);
    bits.push_back(v);
  }
  return bits;
}

void ExpectPanelGemmMatchesRef(int64_t n, int64_t k, int64_t m, int64_t ldx, int64_t ldo, int lo,
                               int hi, ThreadPool* pool, uint32_t seed) {
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, seed, lo, hi);
  const Mxfp4Source src{w.weight.data(), w.scale.data(), n};
  auto packed = PackedMxfp4Matrix::Pack({&src, 1}, k);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  const std::vector<uint16_t> xq = test_util::RandomStridedActivations(m, k, ldx, seed + 1);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const size_t es = dt == DType::kF32 ? 4 : 2;
    std::vector<uint8_t> want(m * ldo * es, 0xAB), got(m * ldo * es, 0xAB);
    Mxfp4GemmRef(w.weight.data(), w.scale.data(), n, k, xq.data(), m, ldx, want.data(), dt, ldo);
    const Mxfp4Call call{packed->view(), xq.data(), m, ldx, nullptr, got.data(), dt, ldo};
    Mxfp4PanelGemmAvx512(call, pool);
    // Columns past n keep the 0xAB filler in both buffers, so this also checks no overrun.
    ASSERT_EQ(Bits(got, dt), Bits(want, dt))
        << "n " << n << " k " << k << " m " << m << " ldx " << ldx << " ldo " << ldo << " bf16 "
        << (dt == DType::kBF16) << " threads " << (pool ? pool->size() : 0);
  }
}

using test_util::HaveAvx512;

TEST(Mxfp4PanelGemm, BitIdenticalToReferenceOverTails) {
  if (!HaveAvx512()) GTEST_SKIP() << "no AVX-512";
  ThreadPool pool2(2);
  uint32_t seed = 1;
  for (int64_t n : {17, 32, 64, 100, 192}) {
    for (int64_t k : {32, 256}) {
      for (int64_t m : {1, 13, 14, 15, 29, 33, 70}) {
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
          ExpectPanelGemmMatchesRef(n, k, m, k, n, 120, 130, pool, seed += 7);
        }
      }
    }
  }
}

// More rows than one row block of the packed A (avx512::kPanelRowBlockBytes: 54 tiles = 378 rows
// at K = 8192): the blocks after the first give the reference's bits, 1 and 2 threads.
TEST(Mxfp4PanelGemm, SeveralRowBlocks) {
  if (!HaveAvx512()) GTEST_SKIP() << "no AVX-512";
  ThreadPool pool2(2);
  ExpectPanelGemmMatchesRef(17, 8192, 385, 8192, 17, 120, 130, nullptr, 201);
  ExpectPanelGemmMatchesRef(17, 8192, 385, 8192, 17, 120, 130, &pool2, 203);
}

TEST(Mxfp4PanelGemm, StridedRowsAndExtremeScales) {
  if (!HaveAvx512()) GTEST_SKIP() << "no AVX-512";
  ThreadPool pool2(2);
  // ldx > k with NaN gaps (must never be read), ldo > n (columns past n untouched).
  ExpectPanelGemmMatchesRef(80, 96, 31, 96 + 32, 80 + 5, 120, 130, &pool2, 101);
  // Scale code 0 (subnormal 2^-127: subnormal totals, bf16 RNE of them) and large codes.
  ExpectPanelGemmMatchesRef(64, 128, 20, 128, 64, 0, 3, &pool2, 103);
  ExpectPanelGemmMatchesRef(64, 128, 20, 128, 64, 240, 254, &pool2, 105);
}

// The public entry point switches to the panel GEMM at kMxfp4PanelGemmMinRows; every row keeps
// the bits it has when run alone (GEMV) or in an 8-row chunk (GEMV-M).
TEST(Mxfp4PanelGemm, RowsMatchSmallBatches) {
  if (!HaveAvx512()) GTEST_SKIP() << "no AVX-512";
  const int64_t n = 160, k = 320, m = kMxfp4PanelGemmMinRows + 9;
  const Mxfp4Weights w = test_util::RandomMxfp4Weights(n, k, 77, 118, 132);
  const Mxfp4Source src{w.weight.data(), w.scale.data(), n};
  auto packed = PackedMxfp4Matrix::Pack({&src, 1}, k);
  ASSERT_TRUE(packed.ok());
  const std::vector<uint16_t> xq = test_util::RandomStridedActivations(m, k, k, 78);
  ThreadPool pool2(2);
  std::vector<float> all(m * n);
  Mxfp4GemmAt(CpuLevel::kAvx512, packed->view(), xq.data(), m, k, all.data(), DType::kF32, n,
              &pool2);
  for (int64_t start : {int64_t{0}, int64_t{5}, m - 8}) {
    for (int64_t rows : {1, 8}) {
      std::vector<float> part(rows * n);
      Mxfp4GemmAt(CpuLevel::kAvx512, packed->view(), xq.data() + start * k, rows, k, part.data(),
                  DType::kF32, n, &pool2);
      EXPECT_EQ(0, std::memcmp(part.data(), all.data() + start * n, rows * n * sizeof(float)))
          << "start " << start << " rows " << rows;
    }
  }
}

// Mxfp4GemmMany (all experts of a step in one call) gives each job the reference's bits, with
// jobs of 1 row (GEMV), a few rows (GEMV-M) and many rows (panel GEMM) mixed.
TEST(Mxfp4GemmMany, EachJobMatchesReference) {
  const int64_t k = 256;
  const std::vector<int64_t> ns = {100, 64, 192, 40}, ms = {1, 3, kMxfp4PanelGemmMinRows + 1, 9};
  std::vector<Mxfp4Weights> ws;
  std::vector<PackedMxfp4Matrix> packs;
  std::vector<std::vector<uint16_t>> xs;
  std::vector<std::vector<float>> outs;
  std::vector<Mxfp4Job> jobs;
  for (size_t i = 0; i < ns.size(); ++i) {
    ws.push_back(test_util::RandomMxfp4Weights(ns[i], k, 200 + i, 118, 132));
    const Mxfp4Source src{ws[i].weight.data(), ws[i].scale.data(), ns[i]};
    auto p = PackedMxfp4Matrix::Pack({&src, 1}, k);
    ASSERT_TRUE(p.ok());
    packs.push_back(std::move(*p));
    xs.push_back(test_util::RandomStridedActivations(ms[i], k, k, 300 + i));
    outs.emplace_back(ms[i] * ns[i], -1.0f);
  }
  for (size_t i = 0; i < ns.size(); ++i) {
    jobs.push_back({packs[i].view(), xs[i].data(), ms[i], k, outs[i].data(), DType::kF32, ns[i]});
  }
  ThreadPool pool2(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
    Mxfp4GemmMany(jobs, pool);
    for (size_t i = 0; i < ns.size(); ++i) {
      std::vector<float> want(ms[i] * ns[i]);
      Mxfp4GemmRef(ws[i].weight.data(), ws[i].scale.data(), ns[i], k, xs[i].data(), ms[i], k,
                   want.data(), DType::kF32, ns[i]);
      EXPECT_EQ(0, std::memcmp(want.data(), outs[i].data(), want.size() * sizeof(float)))
          << "job " << i;
    }
  }
}

}  // namespace
}  // namespace deepinfer::kernels
