// V4.1 prompt rendering against shared/fixtures/chat-v41/cases.jsonl (byte-identical), plus the
// rules the fixture does not exercise, checked against the reference encoder's behaviour.
#include "tokenizer/chat/chat_encoder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace deepinfer::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::vector<Json> ReadOrderedJsonLines(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Json> records;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) records.push_back(Json::parse(line));
  }
  return records;
}

TEST(ChatEncoderTest, MatchesEveryFixtureCase) {
  const auto cases = ReadOrderedJsonLines(DEEPINFER_SHARED_DIR "/fixtures/chat-v41/cases.jsonl");
  ASSERT_EQ(cases.size(), 27u);
  for (const Json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    StatusOr<std::string> prompt = RenderChatRecord(c);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    EXPECT_EQ(*prompt, c["expected_prompt"].get<std::string>());
  }
}

std::string Render(const char* record_json) {
  StatusOr<std::string> prompt = RenderChatRecord(Json::parse(record_json));
  EXPECT_TRUE(prompt.ok()) << prompt.status().ToString();
  return prompt.ok() ? *prompt : std::string();
}

std::string RenderError(const char* record_json) {
  StatusOr<std::string> prompt = RenderChatRecord(Json::parse(record_json));
  EXPECT_FALSE(prompt.ok());
  return prompt.ok() ? std::string() : prompt.status().message();
}

TEST(ChatEncoderTest, TaskTokens) {
  // Non-action tasks append their token right after the user text; "action" opens the assistant.
  EXPECT_EQ(Render(R"({"messages":[{"role":"user","content":"q","task":"query"}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>q<｜query｜>");
  EXPECT_EQ(
      Render(R"({"messages":[{"role":"user","content":"q","task":"action"}],
                       "options":{"thinking":true,"reasoning_effort":"max"}})"),
      "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 100 (range 1-100, the higher the "
      "value, the more thorough the reasoning)\n\n<｜User｜>q<｜Assistant｜><think><｜action｜>");
  // The answer to a task turn carries no reasoning, even in thinking mode after the last user.
  EXPECT_EQ(
      Render(R"({"messages":[{"role":"user","content":"q","task":"action"},
                                  {"role":"assistant","content":"A","reasoning_content":"r"}],
                       "options":{"thinking":true,"reasoning_effort":20}})"),
      "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 20 (range 1-100, the higher the "
      "value, the more thorough the reasoning)\n\n<｜User｜>q<｜Assistant｜><think><｜action｜>"
      "A<｜end▁of▁sentence｜>");
  EXPECT_NE(RenderError(R"({"messages":[{"role":"user","content":"q","task":"nope"}]})")
                .find("invalid task"),
            std::string::npos);
}

TEST(ChatEncoderTest, WithoutEosAndLatestReminder) {
  EXPECT_EQ(Render(R"({"messages":[{"role":"user","content":"Hi"},
                                  {"role":"assistant","content":"Hel","wo_eos":true}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think>Hel");
  // A latest_reminder before the assistant turn: the user turn still gets the header.
  EXPECT_EQ(Render(R"({"messages":[{"role":"user","content":"Hi"},
                                  {"role":"latest_reminder","content":"R"},
                                  {"role":"assistant","content":"Yo"}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think><｜latest_reminder｜>R"
            "Yo<｜end▁of▁sentence｜>");
}

TEST(ChatEncoderTest, ConsecutiveUserMessagesMergeLikeTheReference) {
  EXPECT_EQ(Render(R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>a\n\nb<｜Assistant｜></think>");
  // …but not into a task turn.
  EXPECT_EQ(Render(R"({"messages":[{"role":"user","content":"a","task":"title"},
                                  {"role":"user","content":"b"}]})"),
            "<｜begin▁of▁sentence｜><｜User｜>a<｜User｜>b<｜Assistant｜></think>");
}

TEST(ChatEncoderTest, ArgumentsForms) {
  // Object arguments, double-encoded string arguments, and a non-object → {"arguments": …}.
  const char* kRecord = R"({"messages":[{"role":"user","content":"u"},
      {"role":"assistant","content":"","tool_calls":[
        {"id":"1","type":"function","function":{"name":"f","arguments":{"x":1.0,"y":"s"}}},
        {"id":"2","type":"function","function":{"name":"g","arguments":"\"{\\\"z\\\": [1e-7]}\""}},
        {"id":"3","type":"function","function":{"name":"h","arguments":"not json"}}]}]})";
  EXPECT_EQ(Render(kRecord),
            "<｜begin▁of▁sentence｜><｜User｜>u<｜Assistant｜></think>\n\n<｜DSML｜ calls>\n"
            "<｜DSML｜ invoke name=\"f\">\n"
            "<｜DSML｜ parameter name=\"x\" string=\"false\">1.0</｜DSML｜ parameter>\n"
            "<｜DSML｜ parameter name=\"y\" string=\"true\">s</｜DSML｜ parameter>\n"
            "</｜DSML｜ invoke>\n"
            "<｜DSML｜ invoke name=\"g\">\n"
            "<｜DSML｜ parameter name=\"z\" string=\"false\">[1e-07]</｜DSML｜ parameter>\n"
            "</｜DSML｜ invoke>\n"
            "<｜DSML｜ invoke name=\"h\">\n"
            "<｜DSML｜ parameter name=\"arguments\" string=\"true\">not json</｜DSML｜ parameter>\n"
            "</｜DSML｜ invoke>\n"
            "</｜DSML｜ calls><｜end▁of▁sentence｜>");
}

TEST(ChatEncoderTest, RejectsBadInput) {
  EXPECT_NE(RenderError(R"({"messages":[{"role":"user","content":"x"}],
                            "options":{"thinking":true,"reasoning_effort":"xhigh"}})")
                .find("reasoning_effort"),
            std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":[{"role":"user","content":"x"}],
                            "options":{"reasoning_effort":101}})")
                .find("reasoning_effort"),
            std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":[{"role":"developer","content":"x"}]})").find("role"),
            std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":[{"content":"x"}]})").find("messages[0].role"),
            std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})")
                .find("messages[0].content[0]"),
            std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":"hi"})").find("messages"), std::string::npos);
  EXPECT_NE(RenderError(R"({"messages":[],"tools":[{"type":"function"}]})").find("tools[0]"),
            std::string::npos);
}

}  // namespace
}  // namespace deepinfer::tokenizer
