// Layer descriptors: the released schedule against the v41_model.md §3.0 layer-roles table (43
// layers, expectations written out by band, not by the builder's rule), and the v41-tiny-a
// fixture against its README's layer-roles table, text for text.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "io/json_file.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer::model {
namespace {

using nlohmann::json;

using test::kFixtureDir;
using test::kTestData;

ModelConfig LoadConfig(const std::string& path, bool hf) {
  StatusOr<json> j = io::LoadJsonFile(path);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  if (!j.ok()) return ModelConfig();
  StatusOr<ModelConfig> c = hf ? ParseHfConfig(*j) : ParseInferenceConfig(*j);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ModelConfig();
}

// §3.0 of v41_model.md, band by band.
struct Expected {
  int ratio;
  int kv_source;    // -1: none
  int topk_source;  // -1: none
};

Expected ReleasedRow(int layer) {
  if (layer <= 1 || layer >= 40) return {0, -1, -1};
  if (layer < 8) return {2, 2, 2};
  if (layer < 14) return {2, 8, 8};
  if (layer < 20) return {2, 14, 14};
  if (layer < 24) return {1, 20, 20};
  return {1, 20, 24 + (layer - 24) / 4 * 4};  // 24, 28, 32, 36: each for itself + the next 3
}

TEST(DeepseekV41LayerDescriptors, ReleasedSchedule) {
  for (bool hf : {false, true}) {
    SCOPED_TRACE(hf ? "config.json" : "inference/config.json");
    ModelConfig c = LoadConfig(
        kTestData + (hf ? "/release_hf_config.json" : "/release_inference_config.json"), hf);
    std::vector<LayerDescriptor> layers = BuildLayerDescriptors(c);
    ASSERT_EQ(layers.size(), 43u);
    const std::set<int> owners = {2, 8, 14, 20};
    const std::set<int> indexers = {2, 8, 14, 20, 24, 28, 32, 36};
    for (int i = 0; i < 43; ++i) {
      const LayerDescriptor& d = layers[i];
      SCOPED_TRACE(DumpLayerDescriptor(d));
      const Expected e = ReleasedRow(i);
      const bool mtp = i >= 40;
      EXPECT_EQ(d.index, i);
      EXPECT_EQ(d.name, mtp ? "mtp." + std::to_string(i - 40) : "layers." + std::to_string(i));
      EXPECT_EQ(d.is_mtp, mtp);
      EXPECT_EQ(d.mtp_stage, mtp ? i - 40 : -1);
      EXPECT_EQ(d.compress_ratio, e.ratio);
      EXPECT_EQ(d.window_size, 128);
      EXPECT_EQ(d.rope_theta, e.ratio > 0 ? 160000.0 : 10000.0);
      EXPECT_EQ(d.yarn, e.ratio > 0);
      EXPECT_EQ(d.kv_source_layer, e.kv_source);
      EXPECT_EQ(d.owns_compressor, owners.count(i) == 1);
      EXPECT_EQ(d.compressor_pools, i == 2 || i == 8 || i == 14);
      if (d.owns_compressor) {
        EXPECT_EQ(d.compressor_dtype, i == 20 ? DType::kBF16 : DType::kF32);
      }
      EXPECT_EQ(d.has_indexer, indexers.count(i) == 1);
      EXPECT_EQ(d.index_source_layer, e.topk_source);
      // Reindex layers 24..36 score layer 20's keys; owners score their own.
      EXPECT_EQ(d.index_key_layer, indexers.count(i) ? (i >= 20 ? 20 : i) : -1);
      if (i == 20) {
        EXPECT_EQ(d.candidate_role, CandidateRole::kSource);
      } else if (i == 24 || i == 28 || i == 32 || i == 36) {
        EXPECT_EQ(d.candidate_role, CandidateRole::kConsumer);
        EXPECT_EQ(d.candidate_source_layer, 20);
      } else {
        EXPECT_EQ(d.candidate_role, CandidateRole::kNone);
        EXPECT_EQ(d.candidate_source_layer, -1);
      }
      EXPECT_EQ(d.engram_index, i == 1 ? 0 : i == 14 ? 1 : -1);
      EXPECT_EQ(d.dspark_tap_slot, i >= 37 && i <= 39 ? i - 37 : -1);
      EXPECT_EQ(d.has_main_proj, i == 40);
      EXPECT_EQ(d.has_draft_head, i == 42);
      EXPECT_EQ(d.n_routed_experts, mtp ? 128 : 384);
      EXPECT_EQ(d.n_activated_experts, mtp ? 3 : 6);
      EXPECT_EQ(d.n_shared_experts, 1);
    }
  }
}

// The layer-roles table of the fixture README, as lines.
std::vector<std::string> ReadmeLayerTable() {
  std::ifstream in(kFixtureDir + "/README.md");
  EXPECT_TRUE(in.good());
  std::vector<std::string> lines;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("| layer | name | ratio |", 0) == 0) inside = true;
    if (!inside) continue;
    if (line.empty() || line[0] != '|') break;
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

TEST(DeepseekV41LayerDescriptors, FixtureMatchesReadmeTable) {
  const std::vector<std::string> readme = ReadmeLayerTable();
  ASSERT_EQ(readme.size(), 2u + 7u);  // header, rule, layers 0..6
  for (bool hf : {false, true}) {
    SCOPED_TRACE(hf ? "config.json" : "inference/config.json");
    ModelConfig c = LoadConfig(kFixtureDir + (hf ? "/config.json" : "/inference/config.json"), hf);
    std::vector<LayerDescriptor> layers = BuildLayerDescriptors(c);
    ASSERT_EQ(layers.size(), 7u);
    EXPECT_EQ(Lines(DescribeLayers(layers)), readme);

    // The roles the brief singles out, field by field.
    EXPECT_EQ(layers[2].kv_source_layer, 1);
    EXPECT_EQ(layers[2].index_source_layer, 1);
    EXPECT_FALSE(layers[2].has_indexer);
    EXPECT_EQ(layers[4].kv_source_layer, 3);
    EXPECT_EQ(layers[4].index_source_layer, 3);
    EXPECT_EQ(layers[5].kv_source_layer, 3);
    EXPECT_TRUE(layers[5].has_indexer);
    EXPECT_FALSE(layers[5].owns_compressor);
    EXPECT_EQ(layers[5].index_key_layer, 3);
    EXPECT_EQ(layers[5].index_source_layer, 5);
    EXPECT_EQ(layers[5].candidate_role, CandidateRole::kConsumer);
    EXPECT_EQ(layers[5].candidate_source_layer, 3);
    EXPECT_EQ(layers[3].candidate_role, CandidateRole::kSource);
    EXPECT_EQ(layers[1].compressor_dtype, DType::kF32);
    EXPECT_TRUE(layers[1].compressor_pools);
    EXPECT_EQ(layers[3].compressor_dtype, DType::kBF16);
    EXPECT_FALSE(layers[3].compressor_pools);
    EXPECT_EQ(layers[0].engram_index, 0);
    EXPECT_EQ(layers[1].engram_index, 1);
    EXPECT_EQ(layers[4].dspark_tap_slot, 0);
    EXPECT_EQ(layers[5].dspark_tap_slot, 1);
    EXPECT_TRUE(layers[6].has_main_proj);
    EXPECT_TRUE(layers[6].has_draft_head);  // one stage: first and last
  }
}

TEST(DeepseekV41LayerDescriptors, TapSlotsFollowLayerOrder) {
  // The official forward appends main hiddens in layer order, whatever the list order.
  StatusOr<json> j = io::LoadJsonFile(kFixtureDir + "/inference/config.json");
  ASSERT_TRUE(j.ok());
  (*j)["dspark_target_layer_ids"] = {5, 2};
  StatusOr<ModelConfig> c = ParseInferenceConfig(*j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<LayerDescriptor> layers = BuildLayerDescriptors(*c);
  EXPECT_EQ(layers[2].dspark_tap_slot, 0);
  EXPECT_EQ(layers[5].dspark_tap_slot, 1);
  EXPECT_EQ(layers[4].dspark_tap_slot, -1);
}

TEST(DeepseekV41LayerDescriptors, NoStagesWithoutDSparkBlock) {
  StatusOr<json> j = io::LoadJsonFile(kFixtureDir + "/inference/config.json");
  ASSERT_TRUE(j.ok());
  (*j)["dspark_block_size"] = 0;  // the official code then builds no mtp.* modules
  StatusOr<ModelConfig> c = ParseInferenceConfig(*j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<LayerDescriptor> layers = BuildLayerDescriptors(*c);
  ASSERT_EQ(layers.size(), 6u);
  for (const LayerDescriptor& d : layers) EXPECT_EQ(d.dspark_tap_slot, -1);
}

TEST(DeepseekV41LayerDescriptors, NoYarnWhenOriginalSeqLenIsZero) {
  StatusOr<json> j = io::LoadJsonFile(kFixtureDir + "/inference/config.json");
  ASSERT_TRUE(j.ok());
  (*j)["original_seq_len"] = 0;
  StatusOr<ModelConfig> c = ParseInferenceConfig(*j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<LayerDescriptor> layers = BuildLayerDescriptors(*c);
  EXPECT_EQ(layers[1].rope_theta, 160000.0);  // the compressed theta stays
  EXPECT_FALSE(layers[1].yarn);
  EXPECT_NE(DescribeLayers(layers).find("| 1 | `layers.1` | 2 | \xCE\xB8=160000 | own compressor"),
            std::string::npos);
}

}  // namespace
}  // namespace deepinfer::model
