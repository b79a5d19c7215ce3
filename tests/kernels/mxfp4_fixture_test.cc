// MXFP4 GEMM on the real expert weights of the v41-tiny-a fixture (release byte layout): every
// CPU level against the scalar reference bit for bit, the reference against float64 dequant, and
// the checkpoint's own layout facts (I8 [out, in/2] + E8M0 [out, in/32]).
//
// The safetensors header is parsed here directly (8-byte little-endian length + JSON) to keep
// this kernel test independent of io/.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "level_test_util.h"

namespace deepinfer::kernels {
namespace {

using test_util::AvailableLevels;

struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

class FixtureFile {
 public:
  explicit FixtureFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    uint64_t header_len = 0;
    f.read(reinterpret_cast<char*>(&header_len), 8);
    std::string header(header_len, '\0');
    f.read(header.data(), static_cast<std::streamsize>(header_len));
    ok_ = static_cast<bool>(f);
    if (!ok_) return;
    header_ = nlohmann::json::parse(header);
    data_.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  bool ok() const { return ok_; }

  RawTensor Get(const std::string& name) const {
    const auto& t = header_.at(name);
    RawTensor r{t.at("dtype").get<std::string>(), t.at("shape").get<std::vector<int64_t>>(), {}};
    const auto off = t.at("data_offsets").get<std::vector<size_t>>();
    r.bytes.assign(data_.begin() + off[0], data_.begin() + off[1]);
    return r;
  }

 private:
  bool ok_ = false;
  nlohmann::json header_;
  std::vector<char> data_;
};

std::vector<uint16_t> QuantizedActivations(int64_t m, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.7f);
  std::vector<uint16_t> x(m * k), xq(m * k);
  for (auto& v : x) v = FloatToBf16(nd(rng));
  for (int64_t r = 0; r < m; ++r) QuantizeActScaledBf16Ref(x.data() + r * k, k, xq.data() + r * k);
  return xq;
}

class Mxfp4Fixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new FixtureFile(std::string(DEEPINFER_SHARED_DIR) +
                            "/fixtures/v41-tiny-a/model.safetensors");
  }
  static void TearDownTestSuite() { delete file_; }
  static FixtureFile* file_;
};
FixtureFile* Mxfp4Fixture::file_ = nullptr;

// Checks one packed matrix (rows = sum of the parts) against the reference on each part.
void CheckMatrix(const PackedMxfp4Matrix& packed, const std::vector<const RawTensor*>& weights,
                 const std::vector<const RawTensor*>& scales, int64_t k, const std::string& what) {
  for (int64_t m : {1, 3, 8, 11}) {
    const std::vector<uint16_t> xq = QuantizedActivations(m, k, static_cast<uint32_t>(m * 7 + k));
    // Reference output of the row concatenation, part by part.
    std::vector<float> want(m * packed.n());
    int64_t row0 = 0;
    for (size_t p = 0; p < weights.size(); ++p) {
      const int64_t rows = weights[p]->shape[0];
      Mxfp4GemmRef(weights[p]->bytes.data(), scales[p]->bytes.data(), rows, k, xq.data(), m, k,
                   want.data() + row0, DType::kF32, packed.n());
      // Reference vs float64 dequantization.
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          double sum = 0.0, mag = 0.0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const uint8_t byte = weights[p]->bytes[r * k / 2 + kk / 2];
            const double w =
                E2m1ToFloat((kk % 2) ? byte >> 4 : byte & 0xF) *
                static_cast<double>(Ue8m0ToFloat(scales[p]->bytes[r * k / 32 + kk / 32]));
            const double term = w * Bf16ToFloat(xq[i * k + kk]);
            sum += term;
            mag += std::fabs(term);
          }
          ASSERT_NEAR(want[i * packed.n() + row0 + r], sum, 1e-6 * mag + 1e-30) << what;
        }
      }
      row0 += rows;
    }
    for (CpuLevel level : AvailableLevels()) {
      std::vector<float> got(m * packed.n(), -7.0f);
      Mxfp4GemmAt(level, packed.view(), xq.data(), m, k, got.data(), DType::kF32, packed.n(),
                  nullptr);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4))
          << what << " m " << m << " level " << CpuLevelName(level);
    }
  }
}

TEST_F(Mxfp4Fixture, ExpertsMatchReference) {
  ASSERT_TRUE(file_->ok()) << "fixture not readable under " << DEEPINFER_SHARED_DIR;
  for (const std::string prefix :
       {"layers.0.ffn.experts.", "layers.5.ffn.experts.", "mtp.0.ffn.experts."}) {
    for (int e = 0; e < 4; ++e) {
      const std::string base = prefix + std::to_string(e) + ".";
      const RawTensor w1 = file_->Get(base + "w1.weight"), s1 = file_->Get(base + "w1.scale");
      const RawTensor w3 = file_->Get(base + "w3.weight"), s3 = file_->Get(base + "w3.scale");
      const RawTensor w2 = file_->Get(base + "w2.weight"), s2 = file_->Get(base + "w2.scale");
      ASSERT_EQ(w1.dtype, "I8");
      ASSERT_EQ(s1.dtype, "F8_E8M0");
      const int64_t inter = w1.shape[0], dim = w1.shape[1] * 2;
      ASSERT_EQ(s1.shape, (std::vector<int64_t>{inter, dim / 32}));
      ASSERT_EQ(w2.shape, (std::vector<int64_t>{dim, inter / 2}));
      ASSERT_EQ(s2.shape, (std::vector<int64_t>{dim, inter / 32}));

      auto w13 = PackedMxfp4Matrix::PackFused({w1.bytes.data(), s1.bytes.data(), inter},
                                              {w3.bytes.data(), s3.bytes.data(), inter}, dim);
      ASSERT_TRUE(w13.ok()) << w13.status().ToString();
      CheckMatrix(*w13, {&w1, &w3}, {&s1, &s3}, dim, base + "w1|w3");

      const Mxfp4Source src2{w2.bytes.data(), s2.bytes.data(), dim};
      auto packed2 = PackedMxfp4Matrix::Pack({&src2, 1}, inter);
      ASSERT_TRUE(packed2.ok()) << packed2.status().ToString();
      CheckMatrix(*packed2, {&w2}, {&s2}, inter, base + "w2");
    }
  }
}

}  // namespace
}  // namespace deepinfer::kernels
