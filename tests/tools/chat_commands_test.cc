// `deepinfer render-chat` and `deepinfer parse-output` run as processes: the chat-v41 fixture
// files piped through them must give the expected records exactly, one line per input line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kFixtures = DEEPINFER_SHARED_DIR "/fixtures/chat-v41";

// The built `deepinfer` sits in the build root, one level above this test binary (tests/).
std::string Binary() {
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "deepinfer").string();
}

// Runs `deepinfer ARGS < input_path` and returns stdout split into lines.
std::vector<std::string> RunLines(const std::string& args, const std::string& input_path) {
  const std::string command = "'" + Binary() + "' " + args + " < '" + input_path + "'";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  std::string out;
  char buf[4096];
  size_t n;
  while (pipe && (n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int rc = pipe ? pclose(pipe) : -1;
  EXPECT_EQ(rc, 0) << command;
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\n') {
      lines.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  }
  EXPECT_EQ(start, out.size()) << "output does not end with a newline";
  return lines;
}

std::vector<Json> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(Json::parse(line));
  return out;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const fs::path path =
      fs::temp_directory_path() / ("deepinfer_chat_cmd_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

class ChatCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::exists(Binary())) << Binary() << " is not built"; }
};

TEST_F(ChatCommandsTest, RenderChatMatchesFixture) {
  const auto cases = ReadJsonLines(kFixtures + "/cases.jsonl");
  const auto lines = RunLines("render-chat", kFixtures + "/cases.jsonl");
  ASSERT_EQ(lines.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i]["name"].get<std::string>());
    const Json out = Json::parse(lines[i]);
    ASSERT_TRUE(out.contains("prompt")) << lines[i];
    EXPECT_EQ(out["prompt"].get<std::string>(), cases[i]["expected_prompt"].get<std::string>());
    EXPECT_EQ(out.size(), 1u);
  }
}

TEST_F(ChatCommandsTest, ParseOutputMatchesFixture) {
  const auto cases = ReadJsonLines(kFixtures + "/parse_cases.jsonl");
  const auto lines = RunLines("parse-output", kFixtures + "/parse_cases.jsonl");
  ASSERT_EQ(lines.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i]["name"].get<std::string>());
    const Json out = Json::parse(lines[i]);
    if (cases[i].contains("expected_error")) {
      ASSERT_TRUE(out.contains("error")) << lines[i];
      EXPECT_EQ(out["error"], cases[i]["expected_error"]);
      continue;
    }
    Json expected = cases[i]["expected"];
    for (Json& call : expected["tool_calls"]) call.erase("arguments_json");
    EXPECT_EQ(out, expected) << lines[i];
  }
}

TEST_F(ChatCommandsTest, BadLinesGiveErrorsAndTheStreamContinues) {
  const std::string input =
      WriteTemp("bad.jsonl",
                "not json\n[1]\n{\"messages\": "
                "5}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n" +
                    std::string(300, '[') + "\n");
  const auto lines = RunLines("render-chat", input);
  ASSERT_EQ(lines.size(), 6u);
  for (size_t i : {0, 1, 2, 3, 5}) EXPECT_TRUE(Json::parse(lines[i]).contains("error")) << lines[i];
  EXPECT_EQ(Json::parse(lines[4])["prompt"],
            "<｜begin▁of▁sentence｜><｜User｜>x<｜Assistant｜></think>");

  const std::string parse_input = WriteTemp(
      "bad_parse.jsonl", "{\"text\": 1}\n{\"text\": \"a\\u2028b<｜end▁of▁sentence｜>\"}\n");
  const auto parsed = RunLines("parse-output", parse_input);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_TRUE(Json::parse(parsed[0]).contains("error"));
  // U+2028 is escaped so that the record stays on one line for any line splitter.
  EXPECT_NE(parsed[1].find("a\\u2028b"), std::string::npos) << parsed[1];
  EXPECT_EQ(Json::parse(parsed[1])["content"], "a\u2028b");
  fs::remove(input);
  fs::remove(parse_input);
}

TEST_F(ChatCommandsTest, TokenizerDirSuppliesBos) {
  const fs::path dir =
      fs::temp_directory_path() / ("deepinfer_chat_tok_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": {"content": "<BOS>"}})";
  const std::string input =
      WriteTemp("bos.jsonl", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n");
  const auto lines = RunLines("render-chat --tokenizer '" + dir.string() + "'", input);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(Json::parse(lines[0])["prompt"], "<BOS><｜User｜>x<｜Assistant｜></think>");
  fs::remove_all(dir);
  fs::remove(input);
}

}  // namespace
