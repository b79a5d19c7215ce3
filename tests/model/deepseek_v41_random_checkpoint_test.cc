// make-checkpoint's generator: a random checkpoint of the fixture config validates against the
// manifest, is a pure function of the seed (thread count and sharding change no byte), its FP8
// block scales are tight (every non-zero block's largest |code| decodes into [224, 448]), its
// statistics are those promised in random_checkpoint.h, and the stand-in Engram map equals the
// fixture's for the fixture's sizes.
#include "model/deepseek_v41/random_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "../io/test_files.h"
#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "fixture_util.h"
#include "io/checkpoint.h"
#include "io/json_file.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/weight_manifest.h"

namespace deepinfer::model {
namespace {

using test::kFixtureDir;

ModelConfig FixtureConfig() {
  StatusOr<ModelConfig> c = LoadModelConfig(kFixtureDir);
  CHECK(c.ok()) << c.status().ToString();
  return *c;
}

std::string Bytes(const TensorView& v) {
  return std::string(reinterpret_cast<const char*>(v.data), v.n_bytes);
}

// One checkpoint shared by the tests below (seed 7, default pool, one file).
class RandomCheckpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new io::testing::TempDir();
    RandomCheckpointOptions o;
    o.seed = 7;
    o.show_progress = false;
    const Status s = WriteRandomCheckpoint(FixtureConfig(), dir_->path(), o);
    CHECK(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static io::testing::TempDir* dir_;
};
io::testing::TempDir* RandomCheckpoint::dir_ = nullptr;

TEST_F(RandomCheckpoint, ValidatesAgainstTheManifest) {
  const io::Checkpoint c = test::OpenCheckpointQuiet(dir_->path());
  const Status s = ValidateCheckpoint(c, FixtureConfig());
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.total_bytes(), ManifestBytes(ExpectedTensors(FixtureConfig())).total());
  EXPECT_EQ(c.files()[0]->metadata().at("format"), "pt");
}

TEST_F(RandomCheckpoint, SameSeedSameBytesWhateverThreadsAndShards) {
  io::testing::TempDir other;
  ThreadPool one_thread(1);
  RandomCheckpointOptions o;
  o.seed = 7;
  o.show_progress = false;
  o.pool = &one_thread;
  o.max_shard_bytes = 1 << 20;
  ASSERT_TRUE(WriteRandomCheckpoint(FixtureConfig(), other.path(), o).ok());
  const io::Checkpoint a = test::OpenCheckpointQuiet(dir_->path());
  const io::Checkpoint b = test::OpenCheckpointQuiet(other.path());
  EXPECT_GT(b.files().size(), 3u);
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  for (std::string_view name : a.names()) {
    ASSERT_NE(b.Find(name), nullptr) << name;
    EXPECT_EQ(Bytes(*a.Find(name)), Bytes(*b.Find(name))) << name;
  }

  io::testing::TempDir third;
  o.seed = 8;
  o.max_shard_bytes = 0;
  ASSERT_TRUE(WriteRandomCheckpoint(FixtureConfig(), third.path(), o).ok());
  const io::Checkpoint d = test::OpenCheckpointQuiet(third.path());
  size_t differing = 0;
  for (std::string_view name : a.names()) differing += Bytes(*a.Find(name)) != Bytes(*d.Find(name));
  // Every tensor but the tiny ones whose values may coincide (e.g. a [3] scale) changes.
  EXPECT_GT(differing, a.num_tensors() * 9 / 10);
}

// Largest |code| of each block, decoded: in [224, 448], or the whole block is zero.
TEST_F(RandomCheckpoint, Fp8BlockScalesAreTight) {
  const io::Checkpoint c = test::OpenCheckpointQuiet(dir_->path());
  size_t blocks = 0;
  for (const WeightSpec& w : ExpectedWeights(FixtureConfig())) {
    if (w.layout != WeightLayout::kFp8Tile32 && w.layout != WeightLayout::kFp8Row32) continue;
    const TensorView v = *c.Find(w.name);
    const TensorView s = *c.Find(w.ScaleName());
    const int64_t rows = v.shape[0], cols = v.shape[1];
    const int64_t block_rows = w.layout == WeightLayout::kFp8Tile32 ? 32 : 1;
    const auto codes = v.As<uint8_t>();
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      for (int64_t c0 = 0; c0 < cols; c0 += 32) {
        float amax = 0;
        for (int64_t r = r0; r < std::min(rows, r0 + block_rows); ++r) {
          for (int64_t col = c0; col < std::min(cols, c0 + 32); ++col) {
            amax = std::max(amax, std::fabs(E4m3ToFloat(codes[r * cols + col])));
          }
        }
        ++blocks;
        if (amax == 0) continue;
        ASSERT_GE(amax, 224.0f) << w.name << " block " << r0 << "," << c0;
        ASSERT_LE(amax, 448.0f) << w.name;
      }
    }
    // Scales decode to the weight's scale: RMS of the dequantized weight ~ its target std.
    if (w.kind == WeightKind::kProjection || w.kind == WeightKind::kEngramTable) {
      double sum2 = 0;
      const auto sc = s.As<uint8_t>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t col = 0; col < cols; ++col) {
          const double x = E4m3ToFloat(codes[r * cols + col]) *
                           Ue8m0ToFloat(sc[(r / block_rows) * s.shape[1] + col / 32]);
          sum2 += x * x;
        }
      }
      const double rms = std::sqrt(sum2 / static_cast<double>(rows * cols));
      const double want = w.kind == WeightKind::kEngramTable
                              ? w.gain
                              : w.gain / std::sqrt(static_cast<double>(cols));
      EXPECT_NEAR(rms / want, 1.0, 0.06) << w.name;  // >= 4096 samples: ~1.1% sampling error
    }
  }
  EXPECT_GT(blocks, 1000u);
}

TEST_F(RandomCheckpoint, RealValuedWeightsHaveTheirStatistics) {
  const io::Checkpoint c = test::OpenCheckpointQuiet(dir_->path());
  for (const WeightSpec& w : ExpectedWeights(FixtureConfig())) {
    if (w.layout != WeightLayout::kBf16 ||
        w.shape.back() * (w.shape.size() == 2 ? w.shape[0] : 1) < 200) {
      continue;  // too few samples for a 10% check
    }
    const TensorView v = *c.Find(w.name);
    double sum = 0, sum2 = 0;
    const auto p = v.As<uint16_t>();
    for (uint16_t b : p) {
      const double x = Bf16ToFloat(b);
      sum += x;
      sum2 += x * x;
    }
    const double n = static_cast<double>(p.size());
    const double mean = sum / n, sd = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
    if (w.kind == WeightKind::kNorm) {
      EXPECT_NEAR(mean / w.gain, 1.0, 0.02) << w.name;
      EXPECT_NEAR(sd / w.gain, 0.1, 0.02) << w.name;
    } else {
      const double want = w.kind == WeightKind::kEmbedding
                              ? w.gain
                              : w.gain / std::sqrt(static_cast<double>(w.shape.back()));
      EXPECT_NEAR(sd / want, 1.0, 0.1) << w.name;
      EXPECT_LT(std::fabs(mean), 0.2 * want) << w.name;
    }
  }
}

// Routed experts: scales within one binade of the base, the base as specified, expert 0 shifted;
// the nibbles cover all 16 codes about uniformly.
TEST_F(RandomCheckpoint, ExpertScalesAndCodes) {
  const io::Checkpoint c = test::OpenCheckpointQuiet(dir_->path());
  const ModelConfig config = FixtureConfig();
  for (const WeightSpec& w : ExpectedWeights(config)) {
    if (w.layout != WeightLayout::kMxfp4) continue;
    const bool down = w.name.find(".w2.") != std::string::npos;
    // b = round(log2(gain / (sqrt(8.5625 * 1.75) * sqrt(fan_in)))): w1/w3 (gain 1.5, fan_in
    // 256) and w2 (gain 1.0, fan_in 128) both give -5.
    int base = -5;
    if (w.expert == 0) base += down ? -9 : 4;
    std::set<int> seen;
    for (uint8_t s : c.Find(w.ScaleName())->As<uint8_t>()) seen.insert(static_cast<int>(s) - 127);
    EXPECT_EQ(seen, (std::set<int>{base - 1, base, base + 1})) << w.name;
  }
  std::map<int, int> histogram;
  const TensorView v = *c.Find("layers.4.ffn.experts.2.w3.weight");
  for (uint8_t b : v.As<uint8_t>()) {
    ++histogram[b & 0xF];
    ++histogram[b >> 4];
  }
  ASSERT_EQ(histogram.size(), 16u);
  const double expected = 2.0 * static_cast<double>(v.n_bytes) / 16;
  for (const auto& [code, n] : histogram) EXPECT_NEAR(n / expected, 1.0, 0.15) << code;
}

TEST_F(RandomCheckpoint, EngramTokenMapIsTheFixtures) {
  StatusOr<nlohmann::json> mine = io::LoadJsonFile(dir_->File("engram_token_map.json"));
  StatusOr<nlohmann::json> fixture = io::LoadJsonFile(kFixtureDir + "/engram_token_map.json");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_TRUE(fixture.ok());
  EXPECT_EQ(*mine, *fixture);
}

TEST(StandInEngramTokenMap, HasExactlyCompressedDistinctIds) {
  for (auto [vocab, n] :
       {std::pair<int64_t, int64_t>{512, 256}, {129280, 99092}, {7, 7}, {10, 3}, {100, 1}}) {
    StatusOr<std::vector<int32_t>> map = StandInEngramTokenMap(vocab, n);
    ASSERT_TRUE(map.ok());
    ASSERT_EQ(static_cast<int64_t>(map->size()), vocab);
    const std::set<int32_t> ids(map->begin(), map->end());
    EXPECT_EQ(static_cast<int64_t>(ids.size()), n) << vocab << " -> " << n;
    EXPECT_EQ(*ids.begin(), 0);
    EXPECT_EQ(*ids.rbegin(), n - 1);
    EXPECT_TRUE(std::is_sorted(map->begin(), map->end()));
  }
  EXPECT_FALSE(StandInEngramTokenMap(10, 11).ok());
  EXPECT_FALSE(StandInEngramTokenMap(10, 0).ok());
}

TEST(RandomCheckpointNoEngram, WritesNoTokenMap) {
  StatusOr<nlohmann::json> j = io::LoadJsonFile(kFixtureDir + "/config.json");
  ASSERT_TRUE(j.ok());
  nlohmann::json& t = (*j)["text_config"];
  t.erase("engram_layer_ids");
  t.erase("engram_num_embeddings");
  StatusOr<ModelConfig> config = ParseHfConfig(*j);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  io::testing::TempDir dir;
  RandomCheckpointOptions o;
  o.show_progress = false;
  ASSERT_TRUE(WriteRandomCheckpoint(*config, dir.path(), o).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("engram_token_map.json")));
  EXPECT_TRUE(ValidateCheckpoint(test::OpenCheckpointQuiet(dir.path()), *config).ok());
}

}  // namespace
}  // namespace deepinfer::model
