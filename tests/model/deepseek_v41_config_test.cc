// ModelConfig parsing: the released values (transcribed test data), the v41-tiny-a fixture in
// both spellings, LoadModelConfig's file choice, and one clear error per kind of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "io/json_file.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer::model {
namespace {

using nlohmann::json;

using test::kFixtureDir;
using test::kTestData;

json Load(const std::string& path) {
  StatusOr<json> j = io::LoadJsonFile(path);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : json();
}

ModelConfig MustParse(const StatusOr<ModelConfig>& c) {
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ModelConfig();
}

std::vector<int> ReleasedRatios() {
  std::vector<int> r = {0, 0};
  r.insert(r.end(), 18, 2);
  r.insert(r.end(), 20, 1);
  r.insert(r.end(), 3, 0);
  return r;
}

TEST(DeepseekV41Config, ReleasedInferenceConfig) {
  ModelConfig c =
      MustParse(ParseInferenceConfig(Load(kTestData + "/release_inference_config.json")));
  EXPECT_EQ(c.vocab_size, 129280);
  EXPECT_EQ(c.dim, 5120);
  EXPECT_EQ(c.moe_inter_dim, 2304);
  EXPECT_EQ(c.n_layers, 40);
  EXPECT_EQ(c.n_mtp_layers, 3);
  EXPECT_EQ(c.n_total_layers(), 43);
  EXPECT_EQ(c.n_heads, 64);
  EXPECT_EQ(c.head_dim, 512);
  EXPECT_EQ(c.rope_head_dim, 64);
  EXPECT_EQ(c.nope_head_dim(), 448);
  EXPECT_EQ(c.q_lora_rank, 1280);
  EXPECT_EQ(c.o_groups, 8);
  EXPECT_EQ(c.o_lora_rank, 1024);
  EXPECT_EQ(c.window_size, 128);
  EXPECT_EQ(c.norm_eps, 1e-20);
  EXPECT_EQ(c.n_routed_experts, 384);
  EXPECT_EQ(c.n_shared_experts, 1);
  EXPECT_EQ(c.n_activated_experts, 6);
  EXPECT_EQ(c.score_func, ScoreFunc::kSqrtSoftplus);
  EXPECT_EQ(c.gate_temp, 1.0);    // ModelArgs default
  EXPECT_TRUE(c.norm_topk_prob);  // ModelArgs default
  EXPECT_EQ(c.route_scale, 1.5);
  EXPECT_EQ(c.swiglu_limit, 10.0);
  EXPECT_EQ(c.compress_ratios, ReleasedRatios());
  EXPECT_EQ(c.kv_source_layers, (std::vector<int>{2, 8, 14, 20}));
  EXPECT_EQ(c.index_source_layers, (std::vector<int>{2, 8, 14, 20, 24, 28, 32, 36}));
  EXPECT_EQ(c.candidate_source_layer, 20);
  EXPECT_EQ(c.candidate_topk_blocks, 2048);
  EXPECT_EQ(c.candidate_block_size, 8);
  EXPECT_EQ(c.index_n_heads, 32);
  EXPECT_EQ(c.index_head_dim, 128);
  EXPECT_EQ(c.index_topk, 512);
  EXPECT_EQ(c.rope_theta, 10000);
  EXPECT_EQ(c.compress_rope_theta, 160000);
  EXPECT_EQ(c.yarn, (YarnConfig{16, 65536, 32, 1}));
  EXPECT_EQ(c.hc_mult, 4);
  EXPECT_EQ(c.hc_sinkhorn_iters, 20);
  EXPECT_EQ(c.hc_eps, 1e-6);
  EXPECT_EQ(c.engram_layer_ids, (std::vector<int>{1, 14}));
  EXPECT_EQ(c.engram_num_embeddings, (std::vector<int64_t>{384006168, 384016682}));
  EXPECT_EQ(c.engram_max_ngram_size, 4);
  EXPECT_EQ(c.engram_vocab_size, 16000000);
  EXPECT_EQ(c.engram_n_heads, 8);
  EXPECT_EQ(c.engram_head_dim, 256);
  EXPECT_EQ(c.engram_pad_id, 2);
  EXPECT_EQ(c.engram_compressed_vocab_size, 99092);
  EXPECT_EQ(c.dspark_block_size, 5);
  EXPECT_EQ(c.dspark_noise_token_id, 128799);
  EXPECT_EQ(c.dspark_target_layer_ids, (std::vector<int>{37, 38, 39}));
  EXPECT_EQ(c.dspark_markov_rank, 256);
  EXPECT_EQ(c.RoutedExperts(39), 384);
  EXPECT_EQ(c.ActivatedExperts(39), 6);
  EXPECT_EQ(c.RoutedExperts(40), 128);
  EXPECT_EQ(c.ActivatedExperts(42), 3);
  EXPECT_EQ(c.dtype, WeightFormat::kFp8);
  EXPECT_EQ(c.expert_dtype, WeightFormat::kFp4);
  EXPECT_EQ(c.quant, (QuantConfig{32, 32, "e4m3", "ue8m0"}));
  EXPECT_EQ(c.image_token_id, 129264);
  EXPECT_EQ(c.vision_n_layers, 32);
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_EQ(c.eos_token_id, 1);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 0);  // inference/config.json does not state it
}

TEST(DeepseekV41Config, ReleasedHfConfigEqualsInferenceConfig) {
  ModelConfig hf = MustParse(ParseHfConfig(Load(kTestData + "/release_hf_config.json")));
  ModelConfig inf =
      MustParse(ParseInferenceConfig(Load(kTestData + "/release_inference_config.json")));
  EXPECT_EQ(hf.max_position_embeddings, 1048576);
  inf.max_position_embeddings = hf.max_position_embeddings;  // the one field only HF states
  EXPECT_EQ(hf, inf);
}

TEST(DeepseekV41Config, FixtureSpellingsParseEqual) {
  ModelConfig hf = MustParse(ParseHfConfig(Load(kFixtureDir + "/config.json")));
  ModelConfig inf = MustParse(ParseInferenceConfig(Load(kFixtureDir + "/inference/config.json")));
  EXPECT_EQ(hf.max_position_embeddings, 256);
  EXPECT_EQ(inf.max_position_embeddings, 0);
  inf.max_position_embeddings = hf.max_position_embeddings;
  EXPECT_EQ(hf, inf);

  // The README's model-configuration table.
  EXPECT_EQ(hf.vocab_size, 512);
  EXPECT_EQ(hf.dim, 256);
  EXPECT_EQ(hf.n_layers, 6);
  EXPECT_EQ(hf.n_mtp_layers, 1);
  EXPECT_EQ(hf.compress_ratios, (std::vector<int>{0, 2, 2, 1, 1, 1, 0}));
  EXPECT_EQ(hf.n_heads, 4);
  EXPECT_EQ(hf.head_dim, 64);
  EXPECT_EQ(hf.rope_head_dim, 16);
  EXPECT_EQ(hf.q_lora_rank, 64);
  EXPECT_EQ(hf.o_groups, 2);
  EXPECT_EQ(hf.o_lora_rank, 64);
  EXPECT_EQ(hf.window_size, 16);
  EXPECT_EQ(hf.kv_source_layers, (std::vector<int>{1, 3}));
  EXPECT_EQ(hf.index_source_layers, (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(hf.index_n_heads, 4);
  EXPECT_EQ(hf.index_head_dim, 64);
  EXPECT_EQ(hf.index_topk, 8);
  EXPECT_EQ(hf.candidate_source_layer, 3);
  EXPECT_EQ(hf.candidate_topk_blocks, 3);
  EXPECT_EQ(hf.candidate_block_size, 4);
  EXPECT_EQ(hf.yarn, (YarnConfig{4, 32, 32, 1}));
  EXPECT_EQ(hf.engram_layer_ids, (std::vector<int>{0, 1}));
  EXPECT_EQ(hf.engram_num_embeddings, (std::vector<int64_t>{660, 864}));
  EXPECT_EQ(hf.engram_vocab_size, 100);
  EXPECT_EQ(hf.engram_compressed_vocab_size, 256);
  EXPECT_EQ(hf.dspark_block_size, 3);
  EXPECT_EQ(hf.dspark_noise_token_id, 511);
  EXPECT_EQ(hf.dspark_target_layer_ids, (std::vector<int>{4, 5}));
  EXPECT_EQ(hf.dspark_markov_rank, 32);
  EXPECT_EQ(hf.RoutedExperts(6), 4);
  EXPECT_EQ(hf.ActivatedExperts(6), 2);
  EXPECT_EQ(hf.vision_n_layers, 0);
  EXPECT_EQ(hf.image_token_id, 510);
  EXPECT_EQ(hf.dtype, WeightFormat::kFp8);
  EXPECT_EQ(hf.expert_dtype, WeightFormat::kFp4);
}

TEST(DeepseekV41Config, FlatHfConfigWithoutTextConfig) {
  json composite = Load(kFixtureDir + "/config.json");
  json flat = composite["text_config"];
  flat["quantization_config"] = composite["quantization_config"];
  flat["image_token_id"] = composite["image_token_id"];
  EXPECT_EQ(MustParse(ParseHfConfig(flat)), MustParse(ParseHfConfig(composite)));
}

TEST(DeepseekV41Config, HfWithoutQuantizationIsBf16) {
  json j = Load(kFixtureDir + "/config.json");
  j.erase("quantization_config");
  ModelConfig c = MustParse(ParseHfConfig(j));
  EXPECT_EQ(c.dtype, WeightFormat::kBf16);
  EXPECT_EQ(c.expert_dtype, WeightFormat::kBf16);
  EXPECT_FALSE(c.quant.quantized());
}

TEST(DeepseekV41Config, CandidateSourceNullDisables) {
  json j = Load(kFixtureDir + "/inference/config.json");
  j["candidate_source_layer"] = nullptr;
  EXPECT_EQ(MustParse(ParseInferenceConfig(j)).candidate_source_layer, -1);
  j["candidate_source_layer"] = -1;
  j.erase("candidate_topk_blocks");  // unused when off
  EXPECT_EQ(MustParse(ParseInferenceConfig(j)).candidate_source_layer, -1);
}

TEST(DeepseekV41Config, LoadPrefersHfConfigAndFallsBack) {
  ModelConfig loaded = MustParse(LoadModelConfig(kFixtureDir));
  EXPECT_EQ(loaded.max_position_embeddings, 256);  // came from config.json

  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / "deepinfer_v41_config_load";
  fs::remove_all(dir);
  fs::create_directories(dir / "inference");
  fs::copy_file(kFixtureDir + "/inference/config.json", dir / "inference" / "config.json");
  ModelConfig fallback = MustParse(LoadModelConfig(dir.string()));
  EXPECT_EQ(fallback.max_position_embeddings, 0);  // came from inference/config.json
  fallback.max_position_embeddings = 256;
  EXPECT_EQ(fallback, loaded);

  // A config.json that is present but broken is an error naming it, not a silent fallback.
  { std::ofstream(dir / "config.json") << "{\"text_config\": {\"hidden_size\": 256,}"; }
  StatusOr<ModelConfig> broken = LoadModelConfig(dir.string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find((dir / "config.json").string()), std::string::npos)
      << broken.status().message();

  // A validation error is prefixed with the file it came from.
  fs::remove(dir / "config.json");
  json j = Load((dir / "inference" / "config.json").string());
  j["compress_ratios"] = {0, 2};
  { std::ofstream(dir / "inference" / "config.json") << j.dump(); }
  StatusOr<ModelConfig> invalid = LoadModelConfig(dir.string());
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find("inference/config.json: compress_ratios has 2"),
            std::string::npos)
      << invalid.status().message();

  fs::remove_all(dir);
  fs::create_directories(dir);
  StatusOr<ModelConfig> missing = LoadModelConfig(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  fs::remove_all(dir);
}

// --- bad input: each case mutates a valid fixture config and names the expected message ------

struct BadCase {
  const char* what;
  bool hf;  // mutate config.json (text_config) instead of inference/config.json
  std::function<void(json&)> mutate;
  std::vector<std::string> expect;  // substrings of the error message
};

std::vector<BadCase> BadCases() {
  return {
      {"ratios one short",
       false,
       [](json& j) { j["compress_ratios"].erase(6); },
       {"compress_ratios has 6 entries", "n_layers + n_mtp_layers = 6 + 1 = 7"}},
      {"ratios one long (HF)",
       true,
       [](json& j) { j["compress_ratios"].push_back(0); },
       {"compress_ratios has 8 entries"}},
      {"ratios missing",
       false,
       [](json& j) { j.erase("compress_ratios"); },
       {"compress_ratios is missing (required)"}},
      {"ratios missing (HF)",
       true,
       [](json& j) { j.erase("compress_ratios"); },
       {"text_config.compress_ratios is missing (required)"}},
      {"ratio > 0 without a KV source",
       false,
       [](json& j) {
         j["kv_source_layers"] = {3};
         j["index_source_layers"] = {3, 5};
       },
       {"layer 1 has compress ratio 2 but no kv_source_layers entry at or before it"}},
      {"ratio chain broken",
       false,
       [](json& j) {
         j["kv_source_layers"] = {1};
         j["index_source_layers"] = {1, 5};
         j["candidate_source_layer"] = -1;
       },
       {"layer 3 (compress ratio 1) would read the compressed KV of layer 1 (compress ratio 2)"}},
      {"KV source with ratio 0",
       false,
       [](json& j) {
         j["kv_source_layers"] = {0, 1, 3};
       },
       {"kv_source_layers lists layer 0, whose compress ratio is 0"}},
      {"KV source without indexer",
       false,
       [](json& j) {
         j["index_source_layers"] = {1, 5};
       },
       {"kv source layer 3 is not in index_source_layers"}},
      {"source list names an MTP stage",
       false,
       [](json& j) {
         j["index_source_layers"] = {1, 3, 6};
       },
       {"index_source_layers[2] = 6 is not a backbone layer"}},
      {"duplicate source",
       false,
       [](json& j) {
         j["kv_source_layers"] = {1, 3, 3};
       },
       {"kv_source_layers lists layer 3 twice"}},
      {"candidate source not an index source",
       false,
       [](json& j) { j["candidate_source_layer"] = 2; },
       {"candidate_source_layer 2 is not an index source"}},
      {"candidate source not an index source (HF)",
       true,
       [](json& j) { j["candidate_source_layer_id"] = 4; },
       {"candidate_source_layer 4 is not an index source"}},
      {"candidate consumer on another KV cache",
       false,
       [](json& j) { j["candidate_source_layer"] = 1; },
       {"index source layer 3 comes after candidate_source_layer 1", "reads the KV of layer 3"}},
      {"candidate source missing",
       false,
       [](json& j) { j.erase("candidate_source_layer"); },
       {"candidate_source_layer is missing (required"}},
      {"string where a number belongs",
       false,
       [](json& j) { j["dim"] = "256"; },
       {"dim: expected a 32-bit integer, got string \"256\""}},
      {"string where a number belongs (HF)",
       true,
       [](json& j) { j["hidden_size"] = "256"; },
       {"text_config.hidden_size: expected a 32-bit integer, got string \"256\""}},
      {"fractional integer",
       false,
       [](json& j) { j["n_heads"] = 4.5; },
       {"n_heads: expected a 32-bit integer, got number 4.5"}},
      {"string inside a list",
       false,
       [](json& j) { j["compress_ratios"][2] = "2"; },
       {"compress_ratios[2]: expected an integer, got string \"2\""}},
      {"number where a list belongs",
       false,
       [](json& j) { j["kv_source_layers"] = 1; },
       {"kv_source_layers: expected an array of integers, got number 1"}},
      {"string where a float belongs",
       false,
       [](json& j) { j["norm_eps"] = "1e-20"; },
       {"norm_eps: expected a number, got string"}},
      {"bool field as number",
       false,
       [](json& j) { j["norm_topk_prob"] = 1; },
       {"norm_topk_prob: expected true or false"}},
      {"unknown score function",
       false,
       [](json& j) { j["score_func"] = "relu"; },
       {"score_func: expected \"softmax\", \"sigmoid\" or \"sqrtsoftplus\", got \"relu\""}},
      {"DSpark target beyond the backbone",
       false,
       [](json& j) {
         j["dspark_target_layer_ids"] = {4, 6};
       },
       {"dspark_target_layer_ids[1] = 6 is not a backbone layer"}},
      {"DSpark stage with compressed KV",
       false,
       [](json& j) { j["compress_ratios"][6] = 1; },
       {"compress_ratios[6] = 1: DSpark stage mtp.0 is window-only"}},
      {"ratio above the window",
       false,
       [](json& j) {
         for (int i = 1; i <= 2; ++i) j["compress_ratios"][i] = 32;
       },
       {"compress_ratios[1] = 32 must be in [0, window_size = 16]"}},
      {"head_dim not above rope_head_dim",
       false,
       [](json& j) { j["rope_head_dim"] = 64; },
       {"head_dim (64) must exceed rope_head_dim (64)"}},
      {"o_groups does not divide n_heads",
       false,
       [](json& j) { j["o_groups"] = 3; },
       {"o_groups (3) must divide n_heads (4)"}},
      {"dim not a multiple of 32 with FP8 weights",
       false,
       [](json& j) { j["dim"] = 250; },
       {"dim (hidden_size) must be a multiple of 32 for quantized weights, got 250"}},
      {"engram tables do not match layers",
       false,
       [](json& j) { j["engram_num_embeddings"] = {660}; },
       {"engram_num_embeddings has 1 entries but engram_layer_ids has 2"}},
      {"more experts activated than exist",
       false,
       [](json& j) { j["n_activated_experts"] = 5; },
       {"n_activated_experts (5) exceeds n_routed_experts (4)"}},
      {"two shared experts",
       false,
       [](json& j) { j["n_shared_experts"] = 2; },
       {"n_shared_experts must be 1"}},
      {"unknown dense dtype",
       false,
       [](json& j) { j["dtype"] = "int8"; },
       {"dtype: expected \"fp8\" or \"bf16\", got \"int8\""}},
      {"YaRN without its factor",
       false,
       [](json& j) { j.erase("rope_factor"); },
       {"rope_factor is missing (required)"}},
      {"rope scaling of another kind (HF)",
       true,
       [](json& j) { j["rope_scaling"]["rope_type"] = "linear"; },
       {"text_config.rope_scaling.rope_type: only \"yarn\" is supported"}},
      {"two KV heads (HF)",
       true,
       [](json& j) { j["num_key_value_heads"] = 2; },
       {"text_config.num_key_value_heads"}},
      {"optional DSpark/Engram fields absent (HF)",
       true,
       [](json& j) {
         j.erase("dspark_num_experts_per_tok");
         j.erase("engram_pad_token_id");
       },
       {}},  // both have ModelArgs defaults: must parse
  };
}

TEST(DeepseekV41Config, BadInputNamesTheField) {
  const json hf_base = Load(kFixtureDir + "/config.json");
  const json inf_base = Load(kFixtureDir + "/inference/config.json");
  for (const BadCase& bad : BadCases()) {
    SCOPED_TRACE(bad.what);
    StatusOr<ModelConfig> c = Status(StatusCode::kInternal, "unset");
    if (bad.hf) {
      json j = hf_base;
      bad.mutate(j["text_config"]);
      c = ParseHfConfig(j);
    } else {
      json j = inf_base;
      bad.mutate(j);
      c = ParseInferenceConfig(j);
    }
    if (bad.expect.empty()) {
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      continue;
    }
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    for (const std::string& s : bad.expect) {
      EXPECT_NE(c.status().message().find(s), std::string::npos)
          << "message: " << c.status().message() << "\nexpected to contain: " << s;
    }
  }
}

TEST(DeepseekV41Config, BadTopLevelShapes) {
  StatusOr<ModelConfig> c = ParseHfConfig(json::array());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expected a JSON object"), std::string::npos);

  json j = Load(kFixtureDir + "/config.json");
  j["text_config"] = "oops";
  c = ParseHfConfig(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("text_config: expected an object, got string"),
            std::string::npos)
      << c.status().message();

  j = Load(kFixtureDir + "/config.json");
  j["quantization_config"]["weight_block_size"] = {128, 128};
  c = ParseHfConfig(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("weight_block_size must be [32, 32]"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace deepinfer::model
