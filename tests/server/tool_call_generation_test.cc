// Forced tool calls through the engine on the fixture model (random weights stress the grammar
// hardest): for a few real tool schemas, the DSML tool-call grammar (named and "required"), 20
// generations each at temperature 1. Every generation must finish inside the grammar, parse with
// the V4.1 output parser into calls of the right tools, and every call's arguments must validate
// against the tool's parameters with python3-jsonschema (tests/structured/validate_outputs.py).
//
// The fixture model has 512 ids and no tokenizer; as in tests/engine/engine_structured_test.cc
// the test gives the ids byte strings (printable ASCII, every non-ASCII byte, JSON pieces), plus
// the DSML tag pieces the V4.1 format uses, and a logit bias on the pieces that close strings,
// containers and DSML tags keeps the random walks short. The constraint alone decides validity.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../structured/schema_validator.h"
#include "core/check.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "model/deepseek_v41/model.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/tool_call_grammar.h"
#include "structured/vocabulary.h"
#include "tokenizer/chat/output_parser.h"

namespace deepinfer::server {
namespace {

const std::string kFixture = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";

const char* kTools = R"([
  {"name": "get_weather", "description": "Current weather for a location",
   "parameters": {"type": "object", "properties": {
      "location": {"type": "string", "description": "City and country", "maxLength": 20},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["location"]}},
  {"name": "web_search", "parameters": {"type": "object", "properties": {
      "query": {"type": "string", "minLength": 1, "maxLength": 30},
      "filters": {"type": "object", "properties": {
          "site": {"type": "string", "format": "uri"},
          "recent": {"type": "boolean"}},
        "additionalProperties": false},
      "max_results": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 50},
                                {"type": "null"}]}},
    "required": ["query", "filters"]}},
  {"name": "create_event", "parameters": {"type": "object", "$defs": {
      "person": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                 "required": ["email"]}},
    "properties": {
      "title": {"type": "string", "pattern": "^[A-Z][a-z ]{0,15}$"},
      "start": {"type": "string", "format": "date-time"},
      "duration_h": {"type": "number", "exclusiveMinimum": 0, "maximum": 8.5},
      "attendees": {"type": "array", "items": {"$ref": "#/$defs/person"}, "maxItems": 2},
      "kind": {"oneOf": [{"const": "meeting"}, {"const": "call"}, {"type": "null"}]}},
    "required": ["title", "start", "attendees", "kind"]}},
  {"name": "get_time"}
])";

std::shared_ptr<const structured::Vocabulary> FixtureVocabulary(int vocab, int32_t eos) {
  std::vector<std::string> pieces;
  for (const char* p :
       {"\n\n<｜DSML｜ calls>\n", "\n</｜DSML｜ calls>", "<｜DSML｜ invoke name=\"",
        "\n</｜DSML｜ invoke>", "<｜DSML｜ parameter name=\"", "</｜DSML｜ parameter>",
        "\" string=\"true\">", "\" string=\"false\">", "\">\n", "｜"}) {
    pieces.emplace_back(p);
  }
  for (char c = 32; c < 127; ++c) pieces.emplace_back(1, c);
  pieces.emplace_back("\n");
  for (int b = 0x80; b < 0xF8; ++b) pieces.emplace_back(1, static_cast<char>(b));
  for (const char* p :
       {"{\"", "\"}",  "\":", "\", \"", "\"]", "[\"", "true", "false", "null", "{}",
        "[]",  "}, ",  "},",  ", ",     ": ",  "00",  "12",   "-1",    "0.",   ".5",
        "@a",  ".com", "://", "T1",     "Z",   "ab",  "the",  "ing",   "Me",   "2025-"}) {
    pieces.emplace_back(p);
  }
  std::mt19937 rng(7);
  const std::string alphabet = "\"\",,::{}[]abcxyz0129 -._@T";
  while (static_cast<int>(pieces.size()) < vocab - 2) {
    std::string s;
    const int len = 2 + static_cast<int>(rng() % 3);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    pieces.push_back(s);
  }
  std::vector<std::string> bytes(vocab);
  std::vector<bool> usable(vocab, true);
  usable[0] = false;  // BOS
  int k = 0;
  for (int id = 1; id < vocab; ++id) {
    if (id != eos) bytes[id] = pieces[k++];
  }
  auto v = structured::Vocabulary::Create(bytes, usable, {eos});
  CHECK(v.ok()) << v.status().ToString();
  return *v;
}

struct Gen {
  std::string text;
  engine::FinishReason finish = engine::FinishReason::kError;
};

TEST(ToolCallGeneration, ForcedCallsParseAndValidateOnTheFixtureModel) {
  auto loaded = model::Model::Load(kFixture);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::unique_ptr<model::Model> m = std::move(*loaded);
  auto vocab = FixtureVocabulary(m->config().vocab_size, m->config().eos_token_id);
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(kTools);

  // One grammar per named tool, and "required" over all of them.
  structured::GrammarCompiler compiler(vocab);
  std::vector<std::string> forced = {"get_weather", "web_search", "create_event", "get_time", ""};
  std::vector<std::shared_ptr<const structured::CompiledGrammar>> grammars;
  for (const std::string& name : forced) {
    auto ebnf = structured::DsmlToolCallsEbnf(tools, name);
    ASSERT_TRUE(ebnf.ok()) << name << ": " << ebnf.status().ToString();
    auto g = compiler.CompileEbnf(*ebnf);
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().ToString();
    grammars.push_back(*g);
  }

  engine::DeepSeekRunnerOptions ro;
  ro.index_key_mode = model::IndexKeyMode::kOwner;
  auto runner = engine::DeepSeekRunner::Create(m.get(), ro);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  engine::EngineOptions eo;
  eo.kv_budget_bytes = int64_t{256} << 20;
  eo.scheduler.max_running = 64;
  eo.scheduler.max_batch_tokens = 256;
  auto eng = engine::Engine::Create(runner->get(), eo, &m->pool());
  ASSERT_TRUE(eng.ok()) << eng.status().ToString();
  std::vector<std::pair<int32_t, float>> bias;
  for (int32_t id = 0; id < vocab->size(); ++id) {
    const std::string& b = vocab->bytes(id);
    if (b == "</｜DSML｜ parameter>" || b == "\n</｜DSML｜ calls>") {
      bias.emplace_back(id, 8.0f);
    } else if (!b.empty() && (b.back() == '"' || b.back() == '}' || b.back() == ']')) {
      bias.emplace_back(id, 4.0f);
    }
  }
  constexpr int kPer = 20;
  std::vector<Gen> gens(grammars.size() * kPer);
  for (size_t g = 0; g < grammars.size(); ++g) {
    for (int i = 0; i < kPer; ++i) {
      Gen* out = &gens[g * kPer + i];
      engine::Request r;
      r.prompt = {0, static_cast<int32_t>(20 + g), static_cast<int32_t>(5 + i)};
      r.params.temperature = 1.0f;
      r.params.seed = 1000 + i;
      r.params.max_tokens = 250;  // the fixture's context is 256 positions
      r.params.logit_bias = bias;
      r.grammar = grammars[g];
      r.on_output = [out, &vocab](const engine::RequestOutput& o) {
        for (int32_t t : o.new_tokens) out->text += vocab->bytes(t);
        if (o.finished) out->finish = *o.finished;
      };
      ASSERT_TRUE((*eng)->Add(std::move(r)).ok());
    }
  }
  ASSERT_TRUE((*eng)->RunUntilIdle().ok());

  const std::string path = ::testing::TempDir() + "/tool_call_arguments.jsonl";
  std::ofstream records(path);
  int calls = 0, cut = 0;
  for (size_t i = 0; i < gens.size(); ++i) {
    const std::string& name = forced[i / kPer];
    const Gen& gen = gens[i];
    ASSERT_TRUE(gen.finish == engine::FinishReason::kStop ||
                gen.finish == engine::FinishReason::kLength)
        << name << " #" << i % kPer;
    if (gen.finish == engine::FinishReason::kLength) {  // a valid prefix that ran out of context
      ++cut;
      structured::GrammarMatcher matcher(grammars[i / kPer]);
      EXPECT_TRUE(matcher.AcceptBytes(gen.text)) << gen.text;
      continue;
    }
    auto parsed = tokenizer::ParseCompletionV41(gen.text + "<｜end▁of▁sentence｜>", false);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << gen.text;
    EXPECT_TRUE(parsed->content.empty());
    ASSERT_FALSE(parsed->tool_calls.empty()) << gen.text;
    if (!name.empty()) EXPECT_EQ(parsed->tool_calls.size(), 1u);
    for (const auto& call : parsed->tool_calls) {
      if (!name.empty()) EXPECT_EQ(call.name, name);
      const nlohmann::ordered_json* fn = nullptr;
      for (const auto& t : tools) {
        if (t["name"] == call.name) fn = &t;
      }
      ASSERT_NE(fn, nullptr) << call.name;
      const nlohmann::ordered_json schema =
          fn->contains("parameters")
              ? (*fn)["parameters"]
              : nlohmann::ordered_json{{"type", "object"}, {"additionalProperties", false}};
      records << nlohmann::json({{"name", call.name},
                                 {"schema", nlohmann::json::parse(schema.dump())},
                                 {"output", call.arguments}})
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
      ++calls;
    }
  }
  records.close();
  EXPECT_LE(cut * 20, static_cast<int>(gens.size())) << cut << " generations hit the context";
  ASSERT_GT(calls, 0);
  const auto v = structured::test::RunSchemaValidator(path);
  EXPECT_EQ(v.exit_code, 0) << v.report;
  EXPECT_NE(v.report.find("validated " + std::to_string(calls) + " outputs, 0 failures"),
            std::string::npos)
      << v.report;
}

}  // namespace
}  // namespace deepinfer::server
