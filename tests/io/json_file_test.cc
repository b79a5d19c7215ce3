#include "io/json_file.h"

#include <gtest/gtest.h>

#include "test_files.h"

namespace deepinfer::io {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(JsonFile, LoadsFixtureConfig) {
  const std::string path = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a/config.json";
  StatusOr<nlohmann::json> j = LoadJsonFile(path);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_TRUE(j->is_object());
  EXPECT_TRUE(j->contains("text_config"));
  EXPECT_TRUE(j->contains("quantization_config"));
}

TEST(JsonFile, TopLevelKeysInDocumentOrder) {
  std::vector<std::string> keys;
  JsonParseOptions options;
  options.top_level_keys = &keys;
  StatusOr<nlohmann::json> j =
      ParseJson(R"({"zeta": 1, "alpha": {"z": 2, "a": 3}, "mid": []})", "doc", options);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
  EXPECT_EQ((*j)["alpha"]["a"], 3);
}

TEST(JsonFile, ParseErrorNamesFileAndPosition) {
  TempDir dir;
  const std::string path = dir.File("config.json");
  WriteFile(path, "{\n  \"a\": 1,\n  \"b\": tru\n}\n");
  StatusOr<nlohmann::json> j = LoadJsonFile(path);
  ASSERT_FALSE(j.ok());
  const std::string& msg = j.status().message();
  EXPECT_EQ(msg.rfind(path + ": JSON parse error at line 3, column", 0), 0u) << msg;
  EXPECT_NE(msg.find("byte"), std::string::npos) << msg;
}

TEST(JsonFile, DuplicateKeysAreErrors) {
  StatusOr<nlohmann::json> j = ParseJson(R"({"a": {"x": 1, "y": 2, "x": 3}})", "dup.json");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("dup.json"), std::string::npos);
  EXPECT_NE(j.status().message().find("duplicate key \"x\" in object at /a"), std::string::npos)
      << j.status().message();
  // The same key in sibling objects is fine.
  EXPECT_TRUE(ParseJson(R"([{"x": 1}, {"x": 2}])", "ok.json").ok());
}

TEST(JsonFile, DeepNestingIsAnError) {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  StatusOr<nlohmann::json> j = ParseJson(deep, "deep.json");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("nesting deeper"), std::string::npos);
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok, "ok.json").ok());
}

TEST(JsonFile, MissingFileAndDirectory) {
  TempDir dir;
  StatusOr<nlohmann::json> j = LoadJsonFile(dir.File("nope.json"));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kNotFound);
  EXPECT_NE(j.status().message().find("nope.json"), std::string::npos);
  j = LoadJsonFile(dir.path());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("not a regular file"), std::string::npos);
}

TEST(JsonFile, PositionString) {
  EXPECT_EQ(JsonPositionString("ab\ncd", 0), "line 1, column 1");
  EXPECT_EQ(JsonPositionString("ab\ncd", 4), "line 2, column 2");
  EXPECT_EQ(JsonPositionString("ab", 99), "line 1, column 3");
}

}  // namespace
}  // namespace deepinfer::io
