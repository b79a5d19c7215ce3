// The forced tool-call grammar (DSML block) against the V4.1 output parser: what it accepts
// parses into the expected calls and arguments, what the format or the schema rejects it
// rejects, and bad tool definitions are errors.
#include "structured/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/chat/output_parser.h"

namespace deepinfer::structured {
namespace {

using testing::ByteVocabulary;
using testing::FullMatch;
using OJson = nlohmann::ordered_json;

const char* kTools = R"([
  {"name": "get_weather", "description": "Weather for a place",
   "parameters": {"type": "object", "properties": {
      "location": {"type": "string", "minLength": 1, "maxLength": 12},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["location", "unit"]}},
  {"name": "search", "parameters": {"type": "object", "properties": {
      "query": {"type": "string"},
      "filters": {"type": "object", "properties": {"site": {"type": "string"}},
                  "additionalProperties": false},
      "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    "required": ["query"]}},
  {"name": "ping"}
])";

std::shared_ptr<const CompiledGrammar> CompileForced(const std::string& forced) {
  auto ebnf = DsmlToolCallsEbnf(OJson::parse(kTools), forced);
  EXPECT_TRUE(ebnf.ok()) << ebnf.status().ToString();
  if (!ebnf.ok()) return nullptr;
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileEbnf(*ebnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << *ebnf;
  return g.ok() ? *g : nullptr;
}

std::string Param(const std::string& name, bool is_string, const std::string& value) {
  return "<｜DSML｜ parameter name=\"" + name + "\" string=\"" + (is_string ? "true" : "false") +
         "\">" + value + "</｜DSML｜ parameter>";
}
std::string Invoke(const std::string& name, const std::vector<std::string>& params) {
  std::string out = "<｜DSML｜ invoke name=\"" + name + "\">\n";
  for (size_t i = 0; i < params.size(); ++i) out += (i ? "\n" : "") + params[i];
  return out + "\n</｜DSML｜ invoke>";
}
std::string Block(const std::vector<std::string>& invokes) {
  std::string out = "\n\n<｜DSML｜ calls>\n";
  for (size_t i = 0; i < invokes.size(); ++i) out += (i ? "\n" : "") + invokes[i];
  return out + "\n</｜DSML｜ calls>";
}

TEST(ToolCallGrammar, NamedToolMatchesTheRenderedBlockAndParses) {
  auto g = CompileForced("get_weather");
  ASSERT_NE(g, nullptr);
  const std::string text =
      Block({Invoke("get_weather", {Param("location", true, "Paris \"<b>\"\n"),
                                    Param("unit", true, "celsius"), Param("days", false, "3")})});
  ASSERT_TRUE(FullMatch(g, text));
  auto parsed = tokenizer::ParseCompletionV41(text + "<｜end▁of▁sentence｜>", false);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->tool_calls.size(), 1u);
  EXPECT_EQ(parsed->tool_calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(parsed->tool_calls[0].arguments),
            nlohmann::json({{"location", "Paris \"<b>\"\n"}, {"unit", "celsius"}, {"days", 3}}));
  EXPECT_TRUE(parsed->content.empty());

  // Optional parameters may go; required ones, order, types and the one call are enforced.
  EXPECT_TRUE(FullMatch(g, Block({Invoke("get_weather", {Param("location", true, "x"),
                                                         Param("unit", true, "fahrenheit")})})));
  for (const std::string& bad : {
           Block({Invoke("get_weather", {Param("location", true, "x")})}),
           Block({Invoke("get_weather",
                         {Param("unit", true, "celsius"), Param("location", true, "x")})}),
           Block({Invoke("get_weather",
                         {Param("location", true, "x"), Param("unit", true, "kelvin")})}),
           Block({Invoke("get_weather",
                         {Param("location", true, ""), Param("unit", true, "celsius")})}),
           Block({Invoke("get_weather", {Param("location", true, "abcdefghijklm"),
                                         Param("unit", true, "celsius")})}),
           Block({Invoke("get_weather",
                         {Param("location", false, "\"x\""), Param("unit", true, "celsius")})}),
           Block(
               {Invoke("get_weather", {Param("location", true, "x"), Param("unit", true, "celsius"),
                                       Param("days", false, "8")})}),
           Block(
               {Invoke("get_weather", {Param("location", true, "x"), Param("unit", true, "celsius"),
                                       Param("days", true, "3")})}),
           Block({Invoke("search", {Param("query", true, "x")})}),
           Block({Invoke("get_weather",
                         {Param("location", true, "x"), Param("unit", true, "celsius")}),
                  Invoke("get_weather",
                         {Param("location", true, "y"), Param("unit", true, "celsius")})}),
           "Sure." + Block({Invoke("get_weather", {Param("location", true, "x"),
                                                   Param("unit", true, "celsius")})}),
       }) {
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  }
}

TEST(ToolCallGrammar, RequiredAllowsSeveralCallsOfAnyTool) {
  auto g = CompileForced("");
  ASSERT_NE(g, nullptr);
  const std::string text =
      Block({Invoke("search", {Param("query", true, "a｜b"), Param("limit", false, "null")}),
             Invoke("ping", {}),
             Invoke("search", {Param("query", true, "c"),
                               Param("filters", false, R"({"site":"x\uff5c"})")})});
  // A raw string never contains U+FF5C (it could spell a DSML tag); JSON escapes it.
  EXPECT_FALSE(FullMatch(g, text));
  const std::string ok =
      Block({Invoke("search", {Param("query", true, "a|b"), Param("limit", false, "null")}),
             Invoke("ping", {}),
             Invoke("search", {Param("query", true, "c"),
                               Param("filters", false, R"({"site":"x\uff5c"})")})});
  ASSERT_TRUE(FullMatch(g, ok));
  auto parsed = tokenizer::ParseCompletionV41(ok + "<｜end▁of▁sentence｜>", false);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->tool_calls.size(), 3u);
  EXPECT_EQ(parsed->tool_calls[1].name, "ping");
  EXPECT_EQ(parsed->tool_calls[1].arguments, "{}");
  EXPECT_EQ(nlohmann::json::parse(parsed->tool_calls[2].arguments)["filters"]["site"],
            "x\xEF\xBD\x9C");
  EXPECT_FALSE(FullMatch(
      g, Block({Invoke("search",
                       {Param("query", true, "c"), Param("filters", false, R"({"other":1})")})})));
  EXPECT_FALSE(
      FullMatch(g, Block({Invoke("search", {Param("query", true, "c"),
                                            Param("filters", false, R"({"site":"x｜"})")})})));
  EXPECT_FALSE(FullMatch(g, Block({})));  // at least one call
}

TEST(ToolCallGrammar, BadToolsAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([{"name": "f", "parameters": {"anyOf": [{"type": "object"}]}}])",
       "'anyOf' is not supported at the top level"},
      {R"([{"name": "f", "parameters": {"type": "array"}}])", "type \"object\""},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"a\"b": {}}}}])",
       "contains"},
      {R"([{"name": "f｜", "parameters": {}}])", "contains"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}}}])",
       "'uniqueItems' is supported over items with"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2, "minLength": 3}}}}])",
       "minLength above maxLength"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}}])",
       "does not resolve"},
      {R"([{"description": "no name"}])", "needs a name"},
      {R"([])", "at least one tool"},
  };
  for (const auto& [tools, what] : cases) {
    auto e = DsmlToolCallsEbnf(OJson::parse(tools), "");
    ASSERT_FALSE(e.ok()) << tools;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(what), std::string::npos)
        << tools << ": " << e.status().message();
  }
  auto missing = DsmlToolCallsEbnf(OJson::parse(kTools), "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("not in tools"), std::string::npos);
}

TEST(ToolCallGrammar, RefsAndRawPatternsFollowTheSchema) {
  auto ebnf = DsmlToolCallsEbnf(OJson::parse(R"([{"name": "f", "parameters": {
      "type": "object", "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "pt": {"type": "object", "properties": {"x": {"type": "number", "minimum": 0.5}},
               "required": ["x"]}},
      "properties": {"c": {"$ref": "#/$defs/code"}, "p": {"$ref": "#/$defs/pt"},
        "when": {"type": "string", "format": "date"}},
      "required": ["c", "p", "when"]}}])"),
                                "f");
  ASSERT_TRUE(ebnf.ok()) << ebnf.status().ToString();
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileEbnf(*ebnf);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(
      FullMatch(*g, Block({Invoke("f", {Param("c", true, "EUR"), Param("p", false, R"({"x": 0.5})"),
                                        Param("when", true, "2024-02-28")})})));
  EXPECT_FALSE(FullMatch(
      *g, Block({Invoke("f", {Param("c", true, "EURO"), Param("p", false, R"({"x": 0.5})"),
                              Param("when", true, "2024-02-28")})})));
  EXPECT_FALSE(FullMatch(
      *g, Block({Invoke("f", {Param("c", true, "EUR"), Param("p", false, R"({"x": 0.49})"),
                              Param("when", true, "2024-02-28")})})));
}

}  // namespace
}  // namespace deepinfer::structured
