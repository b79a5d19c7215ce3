// V4.1 output parsing: the one-shot parser against shared/fixtures/chat-v41/parse_cases.jsonl
// (accepted and rejected cases), the reference's edge behaviour, and the streaming parser against
// the one-shot parser under every way of splitting the text.
#include "tokenizer/chat/output_parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/chat/output_stream_parser.h"

namespace deepinfer::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::vector<Json> ParseCases() {
  std::ifstream in(DEEPINFER_SHARED_DIR "/fixtures/chat-v41/parse_cases.jsonl");
  EXPECT_TRUE(in.good());
  std::vector<Json> records;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) records.push_back(Json::parse(line));
  }
  return records;
}

TEST(OutputParserTest, MatchesEveryFixtureCase) {
  const auto cases = ParseCases();
  ASSERT_EQ(cases.size(), 11u);
  int n_rejected = 0;
  for (const Json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    StatusOr<ParsedCompletion> parsed =
        ParseCompletionV41(c["text"].get<std::string>(), c["thinking"].get<bool>());
    if (c.contains("expected_error")) {
      ++n_rejected;
      ASSERT_FALSE(parsed.ok());
      EXPECT_EQ(parsed.status().message(), c["expected_error"].get<std::string>());
      continue;
    }
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    const Json& expected = c["expected"];
    EXPECT_EQ(parsed->reasoning_content, expected["reasoning_content"].get<std::string>());
    EXPECT_EQ(parsed->content, expected["content"].get<std::string>());
    ASSERT_EQ(parsed->tool_calls.size(), expected["tool_calls"].size());
    for (size_t i = 0; i < parsed->tool_calls.size(); ++i) {
      const Json& call = expected["tool_calls"][i];
      EXPECT_EQ(parsed->tool_calls[i].name, call["name"].get<std::string>());
      EXPECT_EQ(parsed->tool_calls[i].arguments, call["arguments"].get<std::string>());
      // The rebuilt arguments are valid JSON equal to the reference's parsed form.
      EXPECT_EQ(Json::parse(parsed->tool_calls[i].arguments), call["arguments_json"]);
    }
  }
  EXPECT_EQ(n_rejected, 2);
}

constexpr const char* kCallsHead = "\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n";
constexpr const char* kEos = "<｜end▁of▁sentence｜>";

TEST(OutputParserTest, ReferenceEdgeBehaviour) {
  // Zero-parameter invoke (Python `$` matches before the final "\n").
  auto zero = ParseCompletionV41(
      std::string(kCallsHead) + "\n</｜DSML｜ invoke>\n</｜DSML｜ calls>" + kEos, false);
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  ASSERT_EQ(zero->tool_calls.size(), 1u);
  EXPECT_EQ(zero->tool_calls[0].arguments, "{}");
  // String values are JSON-quoted the Python way (non-ASCII raw, control characters \u00XX).
  auto quoted = ParseCompletionV41(
      std::string(kCallsHead) +
          "<｜DSML｜ parameter name=\"k\" string=\"true\">é\"\x01\t</｜DSML｜ parameter>\n"
          "</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
          kEos,
      false);
  ASSERT_TRUE(quoted.ok()) << quoted.status().ToString();
  EXPECT_EQ(quoted->tool_calls[0].arguments, "{\"k\": \"é\\\"\\u0001\\t\"}");
  // A value may contain the block's closing tag: the parameter terminator decides.
  auto inner = ParseCompletionV41(std::string(kCallsHead) +
                                      "<｜DSML｜ parameter name=\"k\" string=\"true\">a</｜DSML｜ "
                                      "calls>b</｜DSML｜ parameter>\n"
                                      "</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
                                      kEos,
                                  false);
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  EXPECT_EQ(inner->tool_calls[0].arguments, "{\"k\": \"a</｜DSML｜ calls>b\"}");
  // Rejections.
  const std::pair<std::string, const char*> kRejected[] = {
      {"a" + std::string(kEos) + "b", "Unexpected content at end"},
      {"a<think>b" + std::string(kEos), "Unexpected special token '<think>' in content"},
      {std::string(kCallsHead) +
           "<｜DSML｜ parameter name=\"k\" string=\"maybe\">1</｜DSML｜ "
           "parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
           kEos,
       "Parameter format error"},
      {std::string(kCallsHead) +
           "<｜DSML｜ parameter name=\"k\" string=\"true\">1</｜DSML｜ parameter>\n"
           "<｜DSML｜ parameter name=\"k\" string=\"true\">2</｜DSML｜ parameter>\n"
           "</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
           kEos,
       "Duplicate parameter name: 'k'"},
      {std::string(kCallsHead) + "</｜DSML｜ invoke>\n</｜DSML｜ calls>x" + kEos,
       "Unexpected content after tool calls"},
      {"\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke nam=\"f\">\n</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
           std::string(kEos),
       "Tool name format error"},
  };
  for (const auto& [text, message] : kRejected) {
    SCOPED_TRACE(text);
    auto parsed = ParseCompletionV41(text, false);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().message().rfind(message, 0), 0u) << parsed.status().message();
  }
}

struct Collected {
  ParseDelta all;
  Status status;
};

// Feeds `pieces` and concatenates every delta.
Collected Stream(const std::vector<std::string>& pieces, bool thinking) {
  OutputStreamParser parser(thinking);
  Collected c;
  auto add = [&c](ParseDelta d) {
    // A delta never ends inside a UTF-8 character when the pieces do not.
    c.all.reasoning_content += d.reasoning_content;
    c.all.content += d.content;
    for (auto& call : d.tool_calls) c.all.tool_calls.push_back(std::move(call));
  };
  for (const std::string& p : pieces) add(parser.Feed(p));
  add(parser.Finish(&c.status));
  return c;
}

void ExpectStreamMatchesOneShot(const std::vector<std::string>& pieces, const std::string& text,
                                bool thinking) {
  const StatusOr<ParsedCompletion> one_shot = ParseCompletionV41(text, thinking);
  const Collected streamed = Stream(pieces, thinking);
  ASSERT_EQ(streamed.status.ok(), one_shot.ok());
  if (!one_shot.ok()) {
    EXPECT_EQ(streamed.status.message(), one_shot.status().message());
    return;
  }
  EXPECT_EQ(streamed.all.reasoning_content, one_shot->reasoning_content);
  EXPECT_EQ(streamed.all.content, one_shot->content);
  EXPECT_EQ(streamed.all.tool_calls, one_shot->tool_calls);
}

// Splits into Unicode characters (code points).
std::vector<std::string> Characters(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

TEST(OutputStreamParserTest, CharacterByCharacterEqualsOneShot) {
  for (const Json& c : ParseCases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string text = c["text"].get<std::string>();
    ExpectStreamMatchesOneShot(Characters(text), text, c["thinking"].get<bool>());
  }
}

TEST(OutputStreamParserTest, RandomSplitsEqualOneShot) {
  std::mt19937 rng(1234);
  for (const Json& c : ParseCases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string text = c["text"].get<std::string>();
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<std::string> pieces;
      for (size_t i = 0; i < text.size();) {
        const size_t n = std::uniform_int_distribution<size_t>(0, 12)(rng);  // bytes, may be 0
        pieces.push_back(text.substr(i, n));
        i += n;
      }
      ExpectStreamMatchesOneShot(pieces, text, c["thinking"].get<bool>());
    }
  }
}

TEST(OutputStreamParserTest, NeverLeaksAPartialTag) {
  // Fed one byte at a time, no delta may end with a proper prefix of a marker or split a character.
  const std::string text =
      "Thinking…</think>Answer\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n"
      "<｜DSML｜ parameter name=\"a\" string=\"false\">[1]</｜DSML｜ parameter>\n"
      "</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
      std::string(kEos);
  OutputStreamParser parser(/*thinking=*/true);
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
  for (char ch : text) {
    ParseDelta d = parser.Feed(std::string(1, ch));
    for (const std::string* s : {&d.reasoning_content, &d.content}) {
      EXPECT_EQ(s->find('<'), std::string::npos) << *s;
      if (!s->empty()) {
        EXPECT_NE(static_cast<unsigned char>(s->back()) & 0xC0, 0xC0) << "split UTF-8";
      }
    }
    reasoning += d.reasoning_content;
    content += d.content;
    for (auto& c : d.tool_calls) calls.push_back(c);
  }
  EXPECT_EQ(reasoning, "Thinking…");
  EXPECT_EQ(content, "Answer");  // the "\n\n" before the calls block is not content
  ASSERT_EQ(calls.size(), 1u);   // emitted as soon as the block closed, before EOS
  EXPECT_EQ(calls[0].arguments, "{\"a\": [1]}");
  Status status;
  EXPECT_TRUE(parser.Finish(&status).empty());
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(OutputStreamParserTest, MalformedDsmlBecomesContent) {
  const std::string block = "\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke oops>\n</｜DSML｜ calls>";
  OutputStreamParser parser(/*thinking=*/false);
  std::string content;
  for (const std::string& ch : Characters("Hi" + block + kEos)) content += parser.Feed(ch).content;
  Status status;
  content += parser.Finish(&status).content;
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(content, "Hi" + block);
}

TEST(OutputStreamParserTest, ToolCallsCutByMaxTokensBecomePartialCalls) {
  // The generation hit max_tokens at every byte of a two-call block (parameters with quotes, a
  // newline and a raw JSON value): no markup reaches the content; the calls are those the block
  // holds so far, all but the last exactly as in the whole block, the last (its name complete) a
  // prefix of it: OpenAI's partial arguments with finish_reason "length".
  const std::string head = "Sure.";
  const std::string block =
      "\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"get_weather\">\n"
      "<｜DSML｜ parameter name=\"city\" string=\"true\">Paris \"north\"\nside</｜DSML｜ "
      "parameter>\n"
      "<｜DSML｜ parameter name=\"days\" string=\"false\">{\"n\": 3}</｜DSML｜ parameter>\n"
      "</｜DSML｜ invoke>\n<｜DSML｜ invoke name=\"now\">\n</｜DSML｜ invoke>\n</｜DSML｜ calls>";
  OutputStreamParser whole(/*thinking=*/false);
  std::vector<ParsedToolCall> full = whole.Feed(head + block + kEos).tool_calls;
  Status ok;
  whole.Finish(&ok);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  ASSERT_EQ(full.size(), 2u);
  EXPECT_EQ(full[0].arguments, "{\"city\": \"Paris \\\"north\\\"\\nside\", \"days\": {\"n\": 3}}");
  const std::string text = head + block;
  const size_t name_done = text.find("get_weather\">") + std::string("get_weather\"").size();
  for (size_t cut = head.size(); cut < text.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + ": ..." +
                 text.substr(cut > 20 ? cut - 20 : 0, std::min<size_t>(cut, 20)));
    OutputStreamParser parser(/*thinking=*/false);
    ParseDelta d = parser.Feed(text.substr(0, cut));
    Status status;
    ParseDelta rest = parser.Finish(&status, /*cut_short=*/true);
    std::string content = d.content + rest.content;
    std::vector<ParsedToolCall> calls = d.tool_calls;
    calls.insert(calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    EXPECT_EQ(content, head);
    EXPECT_TRUE(rest.reasoning_content.empty());
    ASSERT_LE(calls.size(), full.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].name, full[i].name);
      if (i + 1 < calls.size()) {
        EXPECT_EQ(calls[i].arguments, full[i].arguments);
      } else {
        EXPECT_EQ(full[i].arguments.substr(0, calls[i].arguments.size()), calls[i].arguments)
            << calls[i].arguments;
      }
    }
    if (cut > name_done) EXPECT_GE(calls.size(), 1u);
  }
  // A cut inside a multi-byte character of a marker or a value: the detokenizer ends the text
  // with U+FFFD, which is not part of the call either.
  for (const std::string& opening :
       {head + "\n\n<\xEF\xBF\xBD", head + "\n\n<｜DSML\xEF\xBF\xBD"}) {
    OutputStreamParser parser(/*thinking=*/false);
    std::string content = parser.Feed(TrimCutCharacter(opening)).content;
    Status status;
    ParseDelta rest = parser.Finish(&status, /*cut_short=*/true);
    EXPECT_EQ(content + rest.content, head);
    EXPECT_TRUE(rest.tool_calls.empty());
  }
  for (const std::string& cut_text :
       {head + block.substr(0, block.find("</｜DSML｜ parameter") + 2) + "\xEF\xBF\xBD",
        head + block.substr(0, block.find("side")) + "\xEF\xBF\xBD"}) {
    OutputStreamParser parser(/*thinking=*/false);
    ParseDelta d = parser.Feed(cut_text);
    Status status;
    ParseDelta rest = parser.Finish(&status, /*cut_short=*/true);
    ASSERT_EQ(d.tool_calls.size() + rest.tool_calls.size(), 1u);
    const std::string& args = rest.tool_calls.back().arguments;
    EXPECT_EQ(full[0].arguments.substr(0, args.size()), args);
    EXPECT_EQ(d.content + rest.content, head);
  }
  // Without cut_short the malformed rest stays content (MalformedDsmlBecomesContent).
  OutputStreamParser lenient(/*thinking=*/false);
  std::string content = lenient.Feed(head + block.substr(0, 40)).content;
  Status status;
  content += lenient.Finish(&status).content;
  EXPECT_EQ(content, head + block.substr(0, 40));
}

TEST(OutputStreamParserTest, TruncatedReasoningStaysReasoning) {
  OutputStreamParser parser(/*thinking=*/true);
  std::string reasoning = parser.Feed("still thinking <｜end").reasoning_content;
  Status status;
  ParseDelta rest = parser.Finish(&status);
  reasoning += rest.reasoning_content;
  EXPECT_EQ(status.message(), "Invalid thinking format: missing </think>");
  EXPECT_EQ(reasoning, "still thinking <｜end");
  EXPECT_TRUE(rest.content.empty());
}

}  // namespace
}  // namespace deepinfer::tokenizer
