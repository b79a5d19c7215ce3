// The number codecs against every tensor of the tiny V4.1 fixture checkpoint (released format).
//
// The fixture README states how its values were made: dense FP8 weights use one power-of-two scale
// per 32x32 tile chosen as 2^ceil(log2(amax/448)), so with the right code decoding and the right
// tile-to-scale mapping, every non-zero tile's largest |code value| lies in [224, 448] (amax/s in
// (224, 232) rounds down to 224 in e4m3). That turns
// a layout mistake (transposed scales, wrong tile size, wrong e4m3 exponent bias) into a failure.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/ue8m0.h"
#include "io/checkpoint.h"
#include "test_files.h"

namespace deepinfer::io {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class FixtureCodecs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto ckpt = Checkpoint::Open(testing::kFixtureDir, CheckpointOptions{.show_progress = false});
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    ckpt_ = new Checkpoint(std::move(ckpt).value());
  }
  static void TearDownTestSuite() { delete ckpt_; }
  static Checkpoint* ckpt_;
};
Checkpoint* FixtureCodecs::ckpt_ = nullptr;

TEST_F(FixtureCodecs, EveryCodeOfEveryTensorRoundTrips) {
  int n_checked = 0;
  for (std::string_view name : ckpt_->names()) {
    const TensorView t = ckpt_->Get(name).value();
    const auto bytes = t.As<uint8_t>();
    switch (t.dtype) {
      case DType::kF8E4M3:
        for (uint8_t c : bytes) {
          ASSERT_NE(c & 0x7F, 0x7F) << name << ": NaN code";
          ASSERT_EQ(FloatToE4m3(E4m3ToFloat(c)), c) << name;
        }
        break;
      case DType::kF8E8M0:
        for (uint8_t c : bytes) {
          ASSERT_NE(c, 0xFF) << name << ": NaN scale";
          ASSERT_EQ(FloatToUe8m0(Ue8m0ToFloat(c)), c) << name;
        }
        break;
      case DType::kI8:  // MXFP4 nibble pairs
        for (uint8_t c : bytes) {
          ASSERT_EQ(FloatToE2m1(E2m1ToFloat(c & 0xF)), c & 0xF) << name;
          ASSERT_EQ(FloatToE2m1(E2m1ToFloat(c >> 4)), c >> 4) << name;
        }
        break;
      case DType::kBF16:
        for (uint16_t c : t.As<uint16_t>()) {
          ASSERT_FALSE(std::isnan(Bf16ToFloat(c))) << name;
          ASSERT_EQ(FloatToBf16(Bf16ToFloat(c)), c) << name;
        }
        break;
      default:
        continue;
    }
    ++n_checked;
  }
  EXPECT_EQ(n_checked, 64 + 148 + 84 + 59);
}

// Largest |e4m3 value| in rows [r0, r1) x cols [c0, c1) of a [rows, cols] code matrix.
float TileAmax(const TensorView& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const auto codes = w.As<uint8_t>();
  const int64_t cols = w.shape[1];
  float amax = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c)
      amax = std::fmax(amax, std::fabs(E4m3ToFloat(codes[r * cols + c])));
  }
  return amax;
}

TEST_F(FixtureCodecs, DenseFp8TileScalesMatchTheirTiles) {
  int n_matrices = 0;
  for (std::string_view name : ckpt_->names()) {
    if (!EndsWith(name, ".weight") || name.find("engram.embed") != std::string_view::npos) continue;
    const TensorView w = ckpt_->Get(name).value();
    if (w.dtype != DType::kF8E4M3) continue;
    const std::string scale_name = std::string(name.substr(0, name.size() - 7)) + ".scale";
    const TensorView s = ckpt_->Get(scale_name).value();
    ASSERT_EQ(w.Rank(), 2) << name;
    const int64_t n = w.shape[0], k = w.shape[1];
    ASSERT_EQ(s.shape, (std::vector<int64_t>{(n + 31) / 32, k / 32})) << scale_name;
    for (int64_t tr = 0; tr < s.shape[0]; ++tr) {
      for (int64_t tc = 0; tc < s.shape[1]; ++tc) {
        const float amax = TileAmax(w, tr * 32, std::min(n, tr * 32 + 32), tc * 32, tc * 32 + 32);
        if (amax == 0.0f) continue;
        EXPECT_GE(amax, 224.0f) << name << " tile " << tr << "," << tc;
        EXPECT_LE(amax, 448.0f) << name << " tile " << tr << "," << tc;
      }
    }
    ++n_matrices;
  }
  EXPECT_EQ(n_matrices, 64 - 2);  // every F8_E4M3 tensor but the two Engram tables
}

TEST_F(FixtureCodecs, EngramTablesUseOneScalePer32ColumnsOfARow) {
  for (const char* prefix : {"layers.0.engram.embed", "layers.1.engram.embed"}) {
    const TensorView w = ckpt_->Get(std::string(prefix) + ".weight").value();
    const TensorView s = ckpt_->Get(std::string(prefix) + ".scale").value();
    ASSERT_EQ(w.dtype, DType::kF8E4M3);
    ASSERT_EQ(s.shape, (std::vector<int64_t>{w.shape[0], w.shape[1] / 32})) << prefix;
    for (int64_t r = 0; r < w.shape[0]; ++r) {
      for (int64_t b = 0; b < w.shape[1] / 32; ++b) {
        const float amax = TileAmax(w, r, r + 1, b * 32, b * 32 + 32);
        if (amax == 0.0f) continue;
        ASSERT_GE(amax, 224.0f) << prefix << " row " << r << " block " << b;
        ASSERT_LE(amax, 448.0f) << prefix << " row " << r << " block " << b;
      }
    }
  }
}

TEST_F(FixtureCodecs, ExpertScalesCoverEvery32ElementsOfARow) {
  int n_experts = 0;
  for (std::string_view name : ckpt_->names()) {
    if (name.find(".experts.") == std::string_view::npos || !EndsWith(name, ".weight")) continue;
    const TensorView w = ckpt_->Get(name).value();
    const TensorView s =
        ckpt_->Get(std::string(name.substr(0, name.size() - 7)) + ".scale").value();
    ASSERT_EQ(w.dtype, DType::kI8) << name;
    ASSERT_EQ(s.dtype, DType::kF8E8M0) << name;
    // Stored [out, in/2] bytes; one scale per 32 elements = 16 bytes of a row.
    ASSERT_EQ(s.shape, (std::vector<int64_t>{w.shape[0], w.shape[1] * 2 / 32})) << name;
    ++n_experts;
  }
  EXPECT_EQ(n_experts, 84);
}

}  // namespace
}  // namespace deepinfer::io
