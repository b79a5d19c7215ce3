// The schema corpus (data/schemas.jsonl) against the real DeepSeek vocabulary: random walks
// through the masks, every finished output validated by python3-jsonschema
// (validate_outputs.py), no dead ends, EOS exactly when the grammar can end, and the mask equal
// to brute force on sampled states.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "schema_validator.h"
#include "structured/grammar_matcher.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::structured {
namespace {

constexpr int32_t kModelVocab = 129280;

struct Corpus {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const Vocabulary> vocab;
};

const Corpus& GetCorpus() {
  static Corpus* c = [] {
    auto* out = new Corpus;
    auto tok = tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    CHECK(tok.ok()) << tok.status().ToString();
    out->tok = std::move(*tok);
    out->vocab = Vocabulary::FromTokenizer(*out->tok, kModelVocab).value();
    return out;
  }();
  return *c;
}

using testing::Bit;

std::vector<int32_t> Allowed(const std::vector<uint32_t>& mask) {
  std::vector<int32_t> ids;
  for (size_t w = 0; w < mask.size(); ++w) {
    for (uint32_t b = mask[w]; b; b &= b - 1)
      ids.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(b)));
  }
  return ids;
}

// One random walk: random tokens for `budget` steps, then greedily the token that leaves the
// fewest bytes to complete (among the allowed single-byte tokens and a random sample).
std::string Walk(GrammarMatcher& m, std::mt19937& rng, int budget, bool brute_force_check) {
  const Vocabulary& v = m.compiled().vocabulary();
  const int32_t eos = v.stop_ids().at(0);
  std::vector<uint32_t> mask(v.n_words());
  std::string out;
  for (int step = 0; step < 600; ++step) {
    m.FillNextTokenBitmask(mask.data());
    const std::vector<int32_t> allowed = Allowed(mask);
    EXPECT_FALSE(allowed.empty()) << "dead end after '" << out << "'";
    if (allowed.empty()) return out;
    EXPECT_EQ(Bit(mask, eos), m.CanEnd()) << out;
    if (brute_force_check && (step == 1 || step == budget)) {
      for (int32_t id = 0; id < v.size(); ++id) {
        const bool ok = m.AcceptToken(id);
        if (ok) m.Rollback(1);
        EXPECT_EQ(ok, Bit(mask, id)) << "token " << id << " after '" << out << "'";
      }
    }
    int32_t pick;
    if (step < budget) {
      pick = allowed[rng() % allowed.size()];
    } else {
      std::vector<int32_t> candidates;
      for (int32_t id : allowed) {
        if (v.IsStop(id) || v.bytes(id).size() == 1) candidates.push_back(id);
      }
      for (int i = 0; i < 32; ++i) candidates.push_back(allowed[rng() % allowed.size()]);
      int64_t best = INT64_MAX;
      pick = candidates[0];
      for (int32_t id : candidates) {
        if (!m.AcceptToken(id)) {
          ADD_FAILURE() << "allowed token " << id << " refused";
          continue;
        }
        const int64_t cost = m.IsTerminated() ? -1 : m.MinCompletionBytes();
        m.Rollback(1);
        if (cost < best) best = cost, pick = id;
      }
    }
    EXPECT_TRUE(m.AcceptToken(pick));
    if (m.IsTerminated()) return out;
    out += v.bytes(pick);
  }
  ADD_FAILURE() << "walk did not end: '" << out << "'";
  return out;
}

TEST(StructuredCorpus, RandomWalksValidateAgainstTheirSchemas) {
  const Corpus& corpus = GetCorpus();
  GrammarCompiler compiler(corpus.vocab);
  std::ifstream in(std::string(DEEPINFER_SOURCE_DIR) + "/tests/structured/data/schemas.jsonl");
  ASSERT_TRUE(in.good());
  const std::string out_path = ::testing::TempDir() + "structured_corpus_outputs.jsonl";
  std::ofstream out(out_path);
  std::mt19937 rng(1234);
  std::string line;
  int n_schemas = 0, n_outputs = 0;
  constexpr int kWalksPerSchema = 4;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::ordered_json rec = nlohmann::ordered_json::parse(line);
    const std::string name = rec["name"];
    auto compiled = compiler.CompileJsonSchema(rec["schema"].dump());
    ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status().ToString();
    ++n_schemas;
    for (int w = 0; w < kWalksPerSchema; ++w) {
      GrammarMatcher m(*compiled);
      const int budget = static_cast<int>(rng() % 48);
      const std::string text =
          Walk(m, rng, budget, /*brute_force_check=*/w == 0 && n_schemas % 8 == 1);
      EXPECT_TRUE(m.IsTerminated()) << name;
      nlohmann::ordered_json o = {{"name", name}, {"schema", rec["schema"]}, {"output", text}};
      out << o.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
      ++n_outputs;
    }
  }
  out.close();
  EXPECT_GE(n_schemas, 50);
  const test::ValidatorResult v = test::RunSchemaValidator(out_path);
  const std::string& report = v.report;
  EXPECT_EQ(v.exit_code, 0) << report;
  EXPECT_NE(report.find("validated " + std::to_string(n_outputs) + " outputs, 0 failures"),
            std::string::npos)
      << report;
}

TEST(StructuredCorpus, SpecialTokensAreNeverAllowed) {
  const Corpus& corpus = GetCorpus();
  GrammarCompiler compiler(corpus.vocab);
  auto compiled = compiler.CompileEbnf("root ::= [^\"]*");  // almost everything
  ASSERT_TRUE(compiled.ok());
  GrammarMatcher m(*compiled);
  std::vector<uint32_t> mask(corpus.vocab->n_words());
  m.FillNextTokenBitmask(mask.data());
  const int32_t eos = *corpus.tok->eos_id();
  EXPECT_TRUE(Bit(mask, eos));
  for (const char* special : {"<think>", "</think>", "<｜User｜>", "<｜tool▁calls▁begin｜>"}) {
    auto id = corpus.tok->AddedTokenId(special);
    if (!id.ok()) continue;
    EXPECT_FALSE(Bit(mask, *id)) << special;
    EXPECT_FALSE(m.AcceptToken(*id)) << special;
  }
  EXPECT_FALSE(Bit(mask, kModelVocab - 1));  // a row without a token
  EXPECT_GT(Allowed(mask).size(), 100000u);
}

}  // namespace
}  // namespace deepinfer::structured
