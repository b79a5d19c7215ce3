// Model::DSparkExtend over several sequences in one call (what the runner does every step)
// writes the same stage rings, bit for bit, as one call per sequence, on the v41-tiny-a fixture.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "fixture_util.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

std::vector<uint16_t> RandomTaps(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = FloatToBf16(nd(rng));
  return v;
}

TEST(DSparkExtendTest, BatchedEqualsOneCallPerSequence) {
  auto m = Model::Load(test::TinyFixtureDir());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const ModelConfig& c = model.config();
  ASSERT_TRUE(c.dspark_enabled());
  const int64_t width = static_cast<int64_t>(c.dspark_target_layer_ids.size()) * c.dim;
  // Two rounds (the second continues each sequence's positions); row counts differ per sequence
  // and round, one round passes the stage window.
  const std::vector<std::vector<int64_t>> rounds = {{1, 5, 3}, {2, c.window_size + 3, 1}};
  std::vector<SequenceState> alone, together;
  for (int i = 0; i < 3; ++i) {
    alone.push_back(model.NewSequence());
    together.push_back(model.NewSequence());
  }
  uint32_t seed = 1;
  for (const auto& rows : rounds) {
    std::vector<std::vector<uint16_t>> taps;
    std::vector<DSparkExtendItem> items;
    for (int i = 0; i < 3; ++i) taps.push_back(RandomTaps(rows[i] * width, seed++));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(model.DSparkExtend(&alone[i], taps[i].data(), rows[i]).ok());
      items.push_back({&together[i], taps[i].data(), rows[i]});
    }
    ASSERT_TRUE(model.DSparkExtend(items).ok());
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(together[i].dspark_length, rounds[0][i] + rounds[1][i]);
    EXPECT_EQ(alone[i].dspark_length, together[i].dspark_length) << i;
    ASSERT_EQ(alone[i].dspark.size(), together[i].dspark.size());
    for (size_t s = 0; s < alone[i].dspark.size(); ++s) {
      EXPECT_EQ(alone[i].dspark[s], together[i].dspark[s]) << "sequence " << i << " stage " << s;
      bool written = false;
      for (uint16_t v : together[i].dspark[s]) written = written || v != 0;
      EXPECT_TRUE(written) << "sequence " << i << " stage " << s;
    }
  }
  // An empty batch changes nothing.
  EXPECT_TRUE(model.DSparkExtend(std::span<const DSparkExtendItem>()).ok());
}

}  // namespace
}  // namespace deepinfer::model
