// Sparse attention with sink: reference against a double-precision softmax attention, AVX-512 bit
// for bit against the reference, all-masked rows, thread-count and batch invariance.
#include "kernels/cpu/sparse_attn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace deepinfer::kernels {
namespace {

struct AttnCase {
  int64_t rows, n_kv, n_idx;
  int heads, dim;
  std::vector<uint16_t> q, kv;
  std::vector<int32_t> idx;
  std::vector<float> sink;
  std::vector<uint16_t> out;
};

AttnCase MakeCase(int64_t rows, int64_t n_kv, int64_t n_idx, int heads, int dim, double masked,
                  float q_scale, uint32_t seed) {
  AttnCase c{rows, n_kv, n_idx, heads, dim, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_kv - 1));
  std::bernoulli_distribution mask(masked);
  c.q.resize(rows * heads * dim);
  c.kv.resize(n_kv * dim);
  for (auto& v : c.q) v = FloatToBf16(dist(rng) * q_scale);
  for (auto& v : c.kv) v = FloatToBf16(dist(rng));
  c.idx.resize(rows * n_idx);
  for (auto& i : c.idx) i = mask(rng) ? -1 : pick(rng);
  c.sink.resize(heads);
  for (auto& s : c.sink) s = dist(rng) * 2.0f;
  c.out.assign(rows * heads * dim, 0xFFFF);
  return c;
}

SparseAttnParams Params(AttnCase& c) {
  SparseAttnParams p;
  p.q = c.q.data();
  p.q_row_stride = c.heads * c.dim;
  p.kv = c.kv.data();
  p.kv_stride = c.dim;
  p.n_kv = c.n_kv;
  p.idx = c.idx.data();
  p.idx_stride = c.n_idx;
  p.n_idx = c.n_idx;
  p.sink = c.sink.data();
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  p.out = c.out.data();
  p.out_row_stride = c.heads * c.dim;
  p.n_rows = c.rows;
  p.n_heads = c.heads;
  p.head_dim = c.dim;
  return p;
}

TEST(SparseAttnTest, ReferenceMatchesDoubleSoftmaxWithSink) {
  AttnCase c = MakeCase(3, 300, 200, 4, 64, 0.2, 2.0f, 1);
  SparseAttnRef(Params(c));
  const double scale = 1.0 / 8.0;
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int h = 0; h < c.heads; ++h) {
      const uint16_t* q = &c.q[(r * c.heads + h) * c.dim];
      std::vector<double> s;
      std::vector<int32_t> valid;
      double m = c.sink[h];
      for (int64_t j = 0; j < c.n_idx; ++j) {
        const int32_t i = c.idx[r * c.n_idx + j];
        if (i < 0) continue;
        double dot = 0;
        for (int d = 0; d < c.dim; ++d)
          dot += double(Bf16ToFloat(q[d])) * Bf16ToFloat(c.kv[i * c.dim + d]);
        s.push_back(dot * scale);
        valid.push_back(i);
        m = std::max(m, s.back());
      }
      double denom = std::exp(c.sink[h] - m);
      for (double v : s) denom += std::exp(v - m);
      for (int d = 0; d < c.dim; ++d) {
        double o = 0;
        for (size_t j = 0; j < s.size(); ++j)
          o += std::exp(s[j] - m) * Bf16ToFloat(c.kv[valid[j] * c.dim + d]);
        o /= denom;
        const double got = Bf16ToFloat(c.out[(r * c.heads + h) * c.dim + d]);
        // bf16 probabilities (2^-9 relative each) and the bf16 output: 2^-7 of the value scale.
        EXPECT_NEAR(got, o, 0x1p-7 * 3.0 + std::fabs(o) * 0x1p-8) << r << "," << h << "," << d;
      }
    }
  }
}

TEST(SparseAttnTest, AllMaskedRowGivesZeros) {
  AttnCase c = MakeCase(2, 10, 70, 16, 64, 0.0, 1.0f, 2);
  for (int64_t j = 0; j < c.n_idx; ++j) c.idx[j] = -1;  // row 0 fully masked
  SparseAttn(Params(c));
  for (int i = 0; i < c.heads * c.dim; ++i) ASSERT_EQ(c.out[i], 0) << i;
  bool nonzero = false;
  for (int i = c.heads * c.dim; i < 2 * c.heads * c.dim; ++i) nonzero |= c.out[i] != 0;
  EXPECT_TRUE(nonzero);
  SparseAttnRef(Params(c));
  for (int i = 0; i < c.heads * c.dim; ++i) ASSERT_EQ(c.out[i], 0) << i;
}

// The vector paths this CPU can run, each to be bit-identical to SparseAttnRef.
struct VectorPath {
  const char* name;
  void (*run)(const SparseAttnParams&, ThreadPool*);
};
std::vector<VectorPath> SparseAttnPaths() {
  std::vector<VectorPath> paths;
  if (ActiveCpuLevel() >= CpuLevel::kAvx2) paths.push_back({"avx2", SparseAttnAvx2});
  if (ActiveCpuLevel() == CpuLevel::kAvx512) paths.push_back({"avx512", SparseAttnAvx512});
  return paths;
}

TEST(SparseAttnTest, VectorPathsBitIdenticalToReference) {
  if (SparseAttnPaths().empty()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  struct Shape {
    int64_t rows, n_kv, n_idx;
    int heads, dim;
    double masked;
    float qs;
  };
  for (Shape s : {Shape{1, 2000, 640, 64, 512, 0.05, 1.0f}, Shape{3, 71, 37, 4, 64, 0.3, 3.0f},
                  Shape{2, 200, 129, 20, 96, 0.1, 8.0f}, Shape{2, 64, 1, 16, 32, 0.0, 1.0f},
                  Shape{2, 500, 200, 8, 128, 0.9, 30.0f}}) {
    AttnCase c = MakeCase(s.rows, s.n_kv, s.n_idx, s.heads, s.dim, s.masked, s.qs,
                          static_cast<uint32_t>(s.n_idx));
    SparseAttnRef(Params(c));
    const std::vector<uint16_t> ref = c.out;
    for (const VectorPath& path : SparseAttnPaths()) {
      c.out.assign(c.out.size(), 0xFFFF);
      path.run(Params(c), &pool);
      ASSERT_EQ(ref, c.out) << path.name << " heads " << s.heads << " dim " << s.dim << " n_idx "
                            << s.n_idx;
    }
  }
}

// Prefill-shaped lists (window, then selected entries, then -1 padding up to the longest row):
// rows whose live part ends inside a block, on a block edge, or leaves whole blocks masked, one
// row with holes, one with nothing; several rows so that the many-row tiles (64 and 32 heads per
// work item) run. Large q scales make tiny probabilities, whose products flush to signed zeros.
TEST(SparseAttnTest, VectorPathsPrefillListsBitIdenticalToReference) {
  if (SparseAttnPaths().empty()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  struct Shape {
    int heads, dim;
    float qs;
  };
  const int64_t live[] = {1, 63, 64, 65, 130, 0, 200, 257};
  const int64_t rows = 8, n_kv = 700, n_idx = 257;
  for (Shape s :
       {Shape{64, 512, 1.0f}, Shape{64, 64, 40.0f}, Shape{40, 96, 8.0f}, Shape{20, 32, 1.0f}}) {
    AttnCase c = MakeCase(rows, n_kv, n_idx, s.heads, s.dim, 0.0, s.qs, 7);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = live[r]; j < n_idx; ++j) c.idx[r * n_idx + j] = -1;
    }
    for (int64_t j = 10; j < 80; j += 3) c.idx[6 * n_idx + j] = -1;  // holes in row 6
    SparseAttnRef(Params(c));
    const std::vector<uint16_t> ref = c.out;
    for (const VectorPath& path : SparseAttnPaths()) {
      c.out.assign(c.out.size(), 0xFFFF);
      path.run(Params(c), &pool);
      ASSERT_EQ(ref, c.out) << path.name << " heads " << s.heads << " dim " << s.dim;
    }
  }
}

TEST(SparseAttnTest, InvariantToThreadsBatchAndPerRowKv) {
  AttnCase c = MakeCase(4, 400, 192, 32, 128, 0.1, 2.0f, 5);
  ThreadPool one(1), two(2);
  SparseAttn(Params(c), &one);
  const std::vector<uint16_t> a = c.out;
  SparseAttn(Params(c), &two);
  EXPECT_EQ(a, c.out);
  const int64_t row_elems = c.heads * c.dim;
  for (int64_t r = 0; r < c.rows; ++r) {
    // The same row alone, reading its KV through row_kv.
    SparseAttnParams p = Params(c);
    std::vector<uint16_t> out(row_elems);
    const uint16_t* kv_ptr = c.kv.data();
    p.q += r * p.q_row_stride;
    p.idx += r * p.idx_stride;
    p.out = out.data();
    p.kv = nullptr;
    p.row_kv = &kv_ptr;
    p.n_rows = 1;
    SparseAttn(p, &two);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), a.begin() + r * row_elems)) << r;
  }
}

}  // namespace
}  // namespace deepinfer::kernels
