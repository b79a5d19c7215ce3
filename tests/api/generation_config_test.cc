// A model's generation_config.json as the server's sampling defaults (api/generation_config.h).
#include "api/generation_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "api/sampling_params_json.h"

namespace deepinfer::api {
namespace {

using nlohmann::json;

TEST(GenerationConfig, ReadsTheSamplingKeysAndIgnoresTheRest) {
  auto d = GenerationDefaultsFromJson(json::parse(R"({
    "bos_token_id": 0, "eos_token_id": 1, "do_sample": false, "transformers_version": "4.46.3",
    "temperature": 0.6, "top_p": 0.95, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
    "max_new_tokens": 256})"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FLOAT_EQ(d->params.temperature, 0.6f);
  EXPECT_FLOAT_EQ(d->params.top_p, 0.95f);
  EXPECT_EQ(d->params.top_k, 40);
  EXPECT_FLOAT_EQ(d->params.min_p, 0.05f);
  EXPECT_FLOAT_EQ(d->params.repetition_penalty, 1.1f);
  EXPECT_EQ(d->params.max_tokens, 256);
  EXPECT_EQ(d->summary,
            "temperature 0.6, top_p 0.95, top_k 40, min_p 0.05, repetition_penalty 1.1, "
            "max_new_tokens 256");
  // Fields a generation config cannot set keep the engine's defaults.
  const engine::SamplingParams engine;
  EXPECT_EQ(d->params.n, engine.n);
  EXPECT_FALSE(d->params.seed.has_value());
  EXPECT_EQ(d->params.presence_penalty, engine.presence_penalty);
}

TEST(GenerationConfig, WithoutSamplingKeysItChangesNothing) {
  auto d = GenerationDefaultsFromJson(json::parse(R"({"bos_token_id": 0, "do_sample": true})"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->summary.empty());
  const engine::SamplingParams engine;
  EXPECT_EQ(d->params.temperature, engine.temperature);
  EXPECT_EQ(d->params.top_p, engine.top_p);
  EXPECT_FALSE(d->params.max_tokens.has_value());
}

TEST(GenerationConfig, RefusesValuesARequestCouldNotCarry) {
  for (const char* bad : {R"({"temperature": "hot"})", R"({"top_p": 1.5})", R"({"top_k": 2.5})",
                          R"({"max_new_tokens": 0})", R"({"repetition_penalty": -1})", "[1]"}) {
    auto d = GenerationDefaultsFromJson(json::parse(bad));
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(GenerationConfig, ARequestsOwnFieldsWinOverTheDefaults) {
  auto d = GenerationDefaultsFromJson(
      json::parse(R"({"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 64})"));
  ASSERT_TRUE(d.ok());
  auto none = SamplingParamsFromJson(json::object(), d->params);
  ASSERT_TRUE(none.ok());
  EXPECT_FLOAT_EQ(none->temperature, 0.6f);
  EXPECT_FLOAT_EQ(none->top_p, 0.95f);
  EXPECT_EQ(none->max_tokens, 64);
  auto own = SamplingParamsFromJson(
      json::parse(R"({"temperature": 0, "max_tokens": 5, "top_p": null})"), d->params);
  ASSERT_TRUE(own.ok());
  EXPECT_FLOAT_EQ(own->temperature, 0.0f);
  EXPECT_EQ(own->max_tokens, 5);
  EXPECT_FLOAT_EQ(own->top_p, 0.95f);  // null counts as absent
}

class GenerationConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("deepinfer_genconf_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text) {
    const std::string path = (dir_ / kGenerationConfigFile).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(GenerationConfigFile, LoadsAFileOrTheFolderHoldingIt) {
  const std::string file = Write(R"({"temperature": 0.25})");
  for (const std::string& path : {file, dir_.string()}) {
    auto d = LoadGenerationConfig(path);
    ASSERT_TRUE(d.ok()) << path << ": " << d.status().ToString();
    EXPECT_FLOAT_EQ(d->params.temperature, 0.25f);
    EXPECT_EQ(std::filesystem::path(d->file), std::filesystem::path(file)) << path;
  }
}

TEST_F(GenerationConfigFile, AMissingFileIsNotFoundAndABadOneNamesTheFile) {
  auto missing = LoadGenerationConfig(dir_.string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::string file = Write("{\"temperature\": ");
  auto malformed = LoadGenerationConfig(file);
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(malformed.status().message().find(file), std::string::npos);
  Write(R"({"top_p": 2})");
  auto invalid = LoadGenerationConfig(dir_.string());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(invalid.status().message().find(file), std::string::npos);
  EXPECT_NE(invalid.status().message().find("top_p"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer::api
