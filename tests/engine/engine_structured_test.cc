// Structured outputs through the engine on the fixture model (random weights stress a constraint
// hardest): every schema of tests/structured/data/schemas.jsonl, 20 generations each at
// temperature 1, must finish inside its grammar and validate with python3-jsonschema
// (tests/structured/validate_outputs.py); regex and EBNF constraints likewise.
//
// The fixture model has 512 ids and no tokenizer, so the test gives those ids byte strings: every
// printable ASCII character and every non-ASCII byte (as byte-level BPE has), JSON punctuation
// pairs, keywords, digits, split UTF-8 characters and random fragments - enough that any schema's
// language is reachable. A logit bias on the tokens that close strings and containers keeps
// random-weight generations short; the constraint alone decides what is valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "../structured/schema_validator.h"
#include "engine/deepseek_runner.h"
#include "engine/engine.h"
#include "model/deepseek_v41/model.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/vocabulary.h"

namespace deepinfer::engine {
namespace {

const std::string kFixture = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";

std::shared_ptr<const structured::Vocabulary> FixtureVocabulary(int vocab, int32_t eos) {
  std::vector<std::string> bytes(vocab);
  std::vector<std::string> pieces;
  // Every printable ASCII character and, as in any byte-level BPE vocabulary, every byte that
  // can occur inside UTF-8, so that every partial character can be completed.
  for (char c = 32; c < 127; ++c) pieces.emplace_back(1, c);
  for (int b = 0x80; b < 0xF8; ++b) pieces.emplace_back(1, static_cast<char>(b));
  for (const char* p :
       {"{\"",          "\"}",      "\":",      "\": ", "\", \"", "\",\"", "\"]",   "[\"",
        "\",",          "true",     "false",    "null", "{}",     "[]",    "\"\"",  "}, ",
        "], ",          "},",       "],",       ", ",   ": ",     "00",    "12",    "-1",
        "0.",           ".5",       "e+",       "E-",   "\\n",    "\\\"",  "\\u00", "\xC3\xA9",
        "\xE4\xB8\xAD", "\xF0\x9F", "\x98\x80", "\xC3", "\xA9",   "-0",    "T1",    "Z\"",
        "@a",           ".com",     "://",      "ab",   "the",    "ing"}) {
    pieces.emplace_back(p);
  }
  std::mt19937 rng(5);
  const std::string alphabet = "\"\",,::{}[]abcxyz0129 -._@T";
  while (static_cast<int>(pieces.size()) < vocab - 2) {
    std::string s;
    const int len = 2 + static_cast<int>(rng() % 3);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    pieces.push_back(s);
  }
  std::vector<bool> usable(vocab, true);
  usable[0] = false;  // BOS
  int k = 0;
  for (int id = 0; id < vocab; ++id) {
    if (id == 0 || id == eos) continue;
    bytes[id] = pieces[k++];
  }
  bytes[eos] = "";
  auto v = structured::Vocabulary::Create(bytes, usable, {eos});
  CHECK(v.ok()) << v.status().ToString();
  return *v;
}

class EngineStructuredTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = model::Model::Load(kFixture);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
    vocab_ = new std::shared_ptr<const structured::Vocabulary>(
        FixtureVocabulary(model_->config().vocab_size, model_->config().eos_token_id));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete vocab_;
  }

  struct Gen {
    std::string text;
    FinishReason finish = FinishReason::kError;
    Status error;
  };

  // Runs every (grammar, seed) pair through one engine at temperature 1.
  static std::vector<Gen> Generate(
      const std::vector<std::shared_ptr<const structured::CompiledGrammar>>& grammars,
      int per_grammar, int max_tokens) {
    DeepSeekRunnerOptions ro;
    ro.index_key_mode = model::IndexKeyMode::kOwner;
    auto runner = DeepSeekRunner::Create(model_, ro);
    EXPECT_TRUE(runner.ok());
    EngineOptions eo;
    eo.kv_budget_bytes = int64_t{256} << 20;
    eo.scheduler.max_running = 64;
    eo.scheduler.max_batch_tokens = 256;
    auto engine = Engine::Create(runner->get(), eo, &model_->pool());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    // Favour tokens that close strings, objects and arrays (see the file comment).
    std::vector<std::pair<int32_t, float>> bias;
    for (int32_t id = 0; id < (*vocab_)->size(); ++id) {
      const std::string& b = (*vocab_)->bytes(id);
      if (!b.empty() && (b.back() == '"' || b.back() == '}' || b.back() == ']')) {
        bias.emplace_back(id, 4.0f);
      }
    }
    std::vector<Gen> gens(grammars.size() * per_grammar);
    for (size_t g = 0; g < grammars.size(); ++g) {
      for (int i = 0; i < per_grammar; ++i) {
        Gen* out = &gens[g * per_grammar + i];
        Request r;
        r.prompt = {0, static_cast<int32_t>(10 + g % 400), static_cast<int32_t>(3 + i)};
        r.params.temperature = 1.0f;
        r.params.seed = 77 + i;
        r.params.max_tokens = max_tokens;
        r.params.logit_bias = bias;
        r.grammar = grammars[g];
        r.on_output = [out](const RequestOutput& o) {
          for (int32_t t : o.new_tokens) out->text += (*vocab_)->bytes(t);
          if (o.finished) {
            out->finish = *o.finished;
            out->error = o.error;
          }
        };
        const auto id = (*engine)->Add(std::move(r));
        EXPECT_TRUE(id.ok()) << id.status().ToString();
      }
    }
    EXPECT_TRUE((*engine)->RunUntilIdle().ok());
    return gens;
  }

  static model::Model* model_;
  static std::shared_ptr<const structured::Vocabulary>* vocab_;
};

model::Model* EngineStructuredTest::model_ = nullptr;
std::shared_ptr<const structured::Vocabulary>* EngineStructuredTest::vocab_ = nullptr;

TEST_F(EngineStructuredTest, SchemaCorpusOutputsValidate) {
  std::ifstream in(std::string(DEEPINFER_SOURCE_DIR) + "/tests/structured/data/schemas.jsonl");
  ASSERT_TRUE(in.good());
  structured::GrammarCompiler compiler(*vocab_);
  std::vector<nlohmann::json> cases;
  std::vector<std::shared_ptr<const structured::CompiledGrammar>> grammars;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json c = nlohmann::json::parse(line);
    auto g = compiler.CompileJsonSchema(c["schema"].dump());
    ASSERT_TRUE(g.ok()) << c["name"] << ": " << g.status().ToString();
    grammars.push_back(*g);
    cases.push_back(c);
  }
  ASSERT_GE(cases.size(), 50u);
  constexpr int kPer = 20;
  // The fixture's context is 256 positions.
  const std::vector<Gen> gens = Generate(grammars, kPer, 250);
  const std::string path = ::testing::TempDir() + "/engine_structured_outputs.jsonl";
  std::ofstream out(path);
  // Every generation stays inside its grammar: it ends with the grammar (stop) or runs into the
  // fixture's 256-position context (length) as a valid prefix whose mask is not empty; random
  // walks through unbounded languages (recursion, strings with an unanchored pattern, which is a
  // search: "ab+c" and "^say ..." take any characters after the match, so nearly all 40 of their
  // walks run on) may do the latter, at most 4%. Every finished one must validate.
  int finished = 0, cut = 0;
  for (size_t i = 0; i < gens.size(); ++i) {
    const nlohmann::json& c = cases[i / kPer];
    ASSERT_TRUE(gens[i].finish == FinishReason::kStop || gens[i].finish == FinishReason::kLength)
        << c["name"] << " #" << i % kPer << ": " << gens[i].error.ToString();
    if (gens[i].finish == FinishReason::kLength) {
      ++cut;
      structured::GrammarMatcher m(grammars[i / kPer]);
      ASSERT_TRUE(m.AcceptBytes(gens[i].text)) << c["name"] << ": " << gens[i].text;
      std::vector<uint32_t> bits(static_cast<size_t>(m.n_words()));
      m.FillNextTokenBitmask(bits.data());
      EXPECT_TRUE(std::any_of(bits.begin(), bits.end(), [](uint32_t w) { return w != 0; }))
          << c["name"] << ": dead end after " << gens[i].text;
      continue;
    }
    ++finished;
    out << nlohmann::json({{"name", c["name"]}, {"schema", c["schema"]}, {"output", gens[i].text}})
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
  }
  out.close();
  EXPECT_LE(cut * 25, static_cast<int>(gens.size())) << cut << " generations hit the context";
  EXPECT_GT(finished, 0);
  const structured::test::ValidatorResult v = structured::test::RunSchemaValidator(path);
  EXPECT_EQ(v.exit_code, 0) << v.report;
  EXPECT_NE(v.report.find("validated " + std::to_string(finished) + " outputs, 0 failures"),
            std::string::npos)
      << v.report;
}

TEST_F(EngineStructuredTest, RegexAndEbnfOutputsMatch) {
  structured::GrammarCompiler compiler(*vocab_);
  const std::vector<std::pair<std::string, std::string>> regexes = {
      {R"(\d{3}-\d{4})", R"(\d{3}-\d{4})"},
      {"(yes|no|maybe)", "(yes|no|maybe)"},
      {R"([a-z]{2,8}@[a-z]{2,5}\.com)", R"([a-z]{2,8}@[a-z]{2,5}\.com)"},
      {R"(-?(0|[1-9]\d{0,5})(\.\d{1,3})?)", R"(-?(0|[1-9]\d{0,5})(\.\d{1,3})?)"}};
  std::vector<std::shared_ptr<const structured::CompiledGrammar>> grammars;
  for (const auto& [pattern, check] : regexes) {
    auto g = compiler.CompileRegex(pattern);
    ASSERT_TRUE(g.ok()) << pattern << ": " << g.status().ToString();
    grammars.push_back(*g);
  }
  // EBNF: comma-separated lists of small sums, e.g. "[1+22, 3]".
  auto ebnf = compiler.CompileEbnf(
      "root ::= \"[\" sum (\", \" sum){0,3} \"]\"\n"
      "sum ::= num (\"+\" num){0,2}\n"
      "num ::= [1-9] [0-9]?\n");
  ASSERT_TRUE(ebnf.ok()) << ebnf.status().ToString();
  grammars.push_back(*ebnf);
  constexpr int kPer = 20;
  const std::vector<Gen> gens = Generate(grammars, kPer, 100);
  const std::regex ebnf_check(
      R"(\[[1-9][0-9]?(\+[1-9][0-9]?){0,2}(, [1-9][0-9]?(\+[1-9][0-9]?){0,2}){0,3}\])");
  for (size_t i = 0; i < gens.size(); ++i) {
    const size_t g = i / kPer;
    ASSERT_EQ(gens[i].finish, FinishReason::kStop) << "grammar " << g << ": " << gens[i].text;
    const std::regex re = g < regexes.size() ? std::regex(regexes[g].second) : ebnf_check;
    EXPECT_TRUE(std::regex_match(gens[i].text, re)) << "grammar " << g << ": " << gens[i].text;
  }
}

TEST_F(EngineStructuredTest, GrammarOfAnotherVocabularyIsRejected) {
  auto other = structured::Vocabulary::Create({"", "", "a"}, {false, true, true}, {1});
  ASSERT_TRUE(other.ok());
  structured::GrammarCompiler compiler(*other);
  auto g = compiler.CompileRegex("a+");
  ASSERT_TRUE(g.ok());
  DeepSeekRunnerOptions ro;
  auto runner = DeepSeekRunner::Create(model_, ro);
  ASSERT_TRUE(runner.ok());
  EngineOptions eo;
  eo.kv_budget_bytes = int64_t{64} << 20;
  auto engine = Engine::Create(runner->get(), eo, &model_->pool());
  ASSERT_TRUE(engine.ok());
  Request r;
  r.prompt = {0, 5};
  r.grammar = *g;
  EXPECT_FALSE((*engine)->Add(std::move(r)).ok());
}

}  // namespace
}  // namespace deepinfer::engine
