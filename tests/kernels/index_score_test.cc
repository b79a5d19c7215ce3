// Indexer scoring: reference rounding points against hand/double computation; AVX-512 bit for bit
// against the reference; thread-count and batch invariance.
#include "kernels/cpu/index_score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kv_qdq.h"

namespace deepinfer::kernels {
namespace {

struct Case {
  int64_t rows, keys;
  int heads, dim;
  std::vector<uint16_t> q, w, k;
  std::vector<int64_t> visible;
};

Case MakeCase(int64_t rows, int64_t keys, int heads, int dim, uint32_t seed) {
  Case c{rows, keys, heads, dim, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  c.q.resize(rows * heads * dim);
  c.k.resize(keys * dim);
  c.w.resize(rows * heads);
  for (auto& v : c.q) v = FloatToBf16(dist(rng));
  for (auto& v : c.k) v = FloatToBf16(dist(rng));
  for (auto& v : c.w) v = FloatToBf16(dist(rng) * 0.125f);
  // Like the model: q and k are FP4-QDQ'd (per 32, pow2 scale) before scoring.
  Fp4QdqPow2Block32(c.q.data(), c.q.size());
  Fp4QdqPow2Block32(c.k.data(), c.k.size());
  for (int64_t r = 0; r < rows; ++r) c.visible.push_back(std::max<int64_t>(0, keys - 3 * r));
  return c;
}

IndexScoreParams Params(const Case& c, std::vector<float>& out, bool use_visible) {
  out.assign(c.rows * c.keys, 123.0f);
  IndexScoreParams p;
  p.q = c.q.data();
  p.q_row_stride = c.heads * c.dim;
  p.w = c.w.data();
  p.w_row_stride = c.heads;
  p.k = c.k.data();
  p.k_stride = c.dim;
  p.n_keys = c.keys;
  p.visible = use_visible ? c.visible.data() : nullptr;
  p.score = out.data();
  p.score_stride = c.keys;
  p.n_rows = c.rows;
  p.n_heads = c.heads;
  p.head_dim = c.dim;
  return p;
}

TEST(IndexScoreTest, ReferenceRoundingPoints) {
  Case c = MakeCase(3, 40, 32, 128, 1);
  std::vector<float> out;
  IndexScoreRef(Params(c, out, true));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t t = 0; t < c.keys; ++t) {
      const float got = out[r * c.keys + t];
      if (t >= c.visible[r]) {
        EXPECT_EQ(got, -std::numeric_limits<float>::infinity());
        continue;
      }
      double total = 0;
      for (int h = 0; h < c.heads; ++h) {
        double dot = 0;  // FP4 x FP4 values: the double dot is the exact dot
        for (int d = 0; d < c.dim; ++d)
          dot += double(Bf16ToFloat(c.q[(r * c.heads + h) * c.dim + d])) *
                 Bf16ToFloat(c.k[t * c.dim + d]);
        const float s = RoundToBf16(static_cast<float>(dot));            // 1. bf16 einsum output
        const float relu = s > 0 ? s : 0.0f;                             // 2. relu
        total += RoundToBf16(relu * Bf16ToFloat(c.w[r * c.heads + h]));  // 3. bf16 product
      }
      // 4. fp32 head sum rounded to bf16: at most one bf16 rounding away from the exact sum.
      EXPECT_NEAR(got, total, std::fabs(total) * 0x1p-8 + 1e-30) << r << "," << t;
      EXPECT_EQ(got, RoundToBf16(got));
    }
  }
}

TEST(IndexScoreTest, ScaleIndexWeights) {
  const uint16_t w[2] = {FloatToBf16(3.0f), FloatToBf16(-0.5f)};
  uint16_t out[2];
  ScaleIndexWeights(w, 2, 1.0f / 64.0f, out);  // release: 128^-0.5 * 32^-0.5 = 1/64
  EXPECT_EQ(Bf16ToFloat(out[0]), 3.0f / 64);
  EXPECT_EQ(Bf16ToFloat(out[1]), -0.5f / 64);
}

TEST(IndexScoreTest, VectorPathsBitIdenticalToReference) {
  struct Path {
    const char* name;
    void (*run)(const IndexScoreParams&, ThreadPool*);
  };
  std::vector<Path> paths;
  if (ActiveCpuLevel() >= CpuLevel::kAvx2) paths.push_back({"avx2", IndexScoreAvx2});
  if (ActiveCpuLevel() == CpuLevel::kAvx512) paths.push_back({"avx512", IndexScoreAvx512});
  if (paths.empty()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  struct Shape {
    int64_t rows, keys;
    int heads, dim;
  };
  for (Shape s :
       {Shape{1, 1100, 32, 128}, Shape{5, 77, 4, 64}, Shape{3, 30, 20, 96}, Shape{2, 13, 16, 32}}) {
    Case c = MakeCase(s.rows, s.keys, s.heads, s.dim, static_cast<uint32_t>(s.keys));
    for (bool vis : {false, true}) {
      std::vector<float> ref;
      IndexScoreRef(Params(c, ref, vis));
      for (const Path& path : paths) {
        std::vector<float> vec;
        path.run(Params(c, vec, vis), &pool);
        ASSERT_EQ(ref.size(), vec.size());
        for (size_t i = 0; i < ref.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(ref[i]), std::bit_cast<uint32_t>(vec[i]))
              << path.name << " heads " << s.heads << " dim " << s.dim << " at " << i;
      }
    }
  }
}

TEST(IndexScoreTest, InvariantToThreadsAndBatch) {
  Case c = MakeCase(4, 1500, 32, 128, 9);
  ThreadPool one(1), two(2);
  std::vector<float> a, b;
  IndexScoreParams pa = Params(c, a, true);
  IndexScore(pa, &one);
  IndexScoreParams pb = Params(c, b, true);
  IndexScore(pb, &two);
  EXPECT_EQ(a, b);
  for (int64_t r = 0; r < c.rows; ++r) {  // each row alone
    std::vector<float> single;
    IndexScoreParams p = Params(c, single, true);
    p.q += r * p.q_row_stride;
    p.w += r * p.w_row_stride;
    p.visible += r;
    p.n_rows = 1;
    IndexScore(p, &two);
    EXPECT_TRUE(std::equal(single.begin(), single.begin() + c.keys, a.begin() + r * c.keys));
  }
}

}  // namespace
}  // namespace deepinfer::kernels
