// IndexKeySchedule on the released layer schedule (v41_model.md §3.14, written out here by hand:
// owners 2, 8, 14 at ratio 2 and 20 at ratio 1; index layers 2, 8, 14, 20, 24, 28, 32, 36) and on
// the v41-tiny-a fixture (owners 1 at ratio 2 and 3 at ratio 1; index layers 1, 3, 5).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_util.h"
#include "io/json_file.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/index_key_schedule.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {
namespace {

std::vector<LayerDescriptor> Layers(const std::string& path) {
  StatusOr<nlohmann::json> j = io::LoadJsonFile(path);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  StatusOr<ModelConfig> c = ParseHfConfig(*j);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return BuildLayerDescriptors(*c);
}

TEST(IndexKeyScheduleTest, ReleasedPromptRowsScoreTheirOwnSources) {
  const IndexKeySchedule s(Layers(test::kTestData + "/release_hf_config.json"));
  for (int64_t prompt : {2, 3, 1000, 5000}) {
    for (int64_t pos : {int64_t{0}, int64_t{1}, prompt / 2, prompt - 1}) {
      for (int li : {2, 8, 14, 20}) EXPECT_EQ(s.KeyLayer(li, pos, prompt), li) << pos;
      for (int li : {24, 28, 32, 36}) EXPECT_EQ(s.KeyLayer(li, pos, prompt), 20) << pos;
    }
  }
  // A one-token prompt: the ratio-2 owners emit nothing in the prefill (and their rows see no
  // entry), so they keep their own keys.
  for (int li : {2, 8, 14}) EXPECT_EQ(s.KeyLayer(li, 0, 1), li);
}

TEST(IndexKeyScheduleTest, ReleasedDecodeRowsFollowThePublishingRule) {
  const IndexKeySchedule s(Layers(test::kTestData + "/release_hf_config.json"));
  const int64_t prompt = 1500;
  for (int64_t pos = prompt; pos < prompt + 8; ++pos) {
    // (pos + 1) even: the ratio-2 owners emit and publish their own keys; odd: the slot still
    // holds layer 20's keys from the previous step.
    const bool emits = (pos + 1) % 2 == 0;
    for (int li : {2, 8, 14}) EXPECT_EQ(s.KeyLayer(li, pos, prompt), emits ? li : 20) << pos;
    for (int li : {20, 24, 28, 32, 36}) EXPECT_EQ(s.KeyLayer(li, pos, prompt), 20) << pos;
  }
}

TEST(IndexKeyScheduleTest, ReleasedRowsPerCall) {
  const IndexKeySchedule s(Layers(test::kTestData + "/release_hf_config.json"));
  // Prompt rows never wait for later layers.
  EXPECT_EQ(s.MaxRowsPerCall(0, 4096, 4096), 4096);
  // Decode rows at even positions read layer 20's entries up to (pos + 1) / 2, written by rows
  // before pos0 only when (pos + 1) / 2 <= pos0.
  EXPECT_EQ(s.MaxRowsPerCall(1500, 4, 1500), 4);  // a verify call at a long context
  EXPECT_EQ(s.MaxRowsPerCall(2, 4, 2), 4);        // row 4 reads 2 entries, both written before
  EXPECT_EQ(s.MaxRowsPerCall(1, 4, 1), 3);        // row 4 reads entry 1, which row 1 writes
  // Recompute after a preemption from position 0 with a 10-token prompt and 30 output rows:
  // rows up to 9 are prompt rows; row 10 (even) needs layer 20's first 5 entries, none of which
  // the call has written when layer 2 runs.
  EXPECT_EQ(s.MaxRowsPerCall(0, 40, 10), 10);
  EXPECT_EQ(s.MaxRowsPerCall(10, 30, 10), 12);  // from 10: row 22 needs 11 entries
  EXPECT_EQ(s.MaxRowsPerCall(5, 1, 1), 1);      // one row always runs
}

TEST(IndexKeyScheduleTest, FixtureLayers) {
  const IndexKeySchedule s(Layers(test::kFixtureDir + "/config.json"));
  const int64_t prompt = 47;
  for (int64_t pos = 0; pos < prompt; ++pos) {
    EXPECT_EQ(s.KeyLayer(1, pos, prompt), 1);
    EXPECT_EQ(s.KeyLayer(3, pos, prompt), 3);
    EXPECT_EQ(s.KeyLayer(5, pos, prompt), 3);
  }
  for (int64_t pos = prompt; pos < prompt + 6; ++pos) {
    EXPECT_EQ(s.KeyLayer(1, pos, prompt), (pos + 1) % 2 == 0 ? 1 : 3) << pos;
    EXPECT_EQ(s.KeyLayer(3, pos, prompt), 3);
    EXPECT_EQ(s.KeyLayer(5, pos, prompt), 3);
  }
}

}  // namespace
}  // namespace deepinfer::model
