// The mask against brute force (every token tried with AcceptToken + Rollback) on a synthetic
// vocabulary of multi-byte tokens, so that tokens cross rule boundaries, split UTF-8 characters
// and exercise the mask cache's uncertain tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "test_util.h"

namespace deepinfer::structured {
namespace {

constexpr int32_t kEos = 0, kSpecial = 1;

// ascii: only the bytes below 0x80 and the pieces made of them (no token ends mid-character).
std::shared_ptr<const Vocabulary> SyntheticVocabulary(bool ascii = false) {
  std::vector<std::string> bytes = {"<eos>", "<|special|>"};
  for (int b = 0; b < (ascii ? 128 : 256); ++b) bytes.emplace_back(1, static_cast<char>(b));
  std::vector<std::string> pieces = {
      "{",    "}",    "[",        "]",    "\"",       ",",      ":",    " ",
      "0",    "1",    "9",        "-",    ".",        "e",      "a",    "b",
      "x",    "\\",   "n",        "u",    "\xC3\xA9", "\xC3",   "\xA9", "true",
      "null", "name", "\"name\"", "city", "\": \"",   "\", \"", "\"}"};
  if (ascii) {
    std::erase_if(pieces, [](const std::string& p) {
      return std::any_of(p.begin(), p.end(), [](char c) { return (c & 0x80) != 0; });
    });
  }
  std::mt19937 rng(7);
  std::set<std::string> seen(bytes.begin(), bytes.end());
  while (bytes.size() < 3000) {
    std::string t;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) t += pieces[rng() % pieces.size()];
    if (seen.insert(t).second) bytes.push_back(t);
  }
  std::vector<bool> usable(bytes.size(), true);
  usable[kSpecial] = false;
  return Vocabulary::Create(std::move(bytes), std::move(usable), {kEos}).value();
}

std::vector<uint32_t> BruteForceMask(GrammarMatcher& m, const Vocabulary& v) {
  std::vector<uint32_t> bits(v.n_words(), 0);
  for (int32_t id = 0; id < v.size(); ++id) {
    if (m.AcceptToken(id)) {
      bits[id >> 5] |= 1u << (id & 31);
      m.Rollback(1);
    }
  }
  return bits;
}

using testing::Bit;

// Random walks; at every step the mask must equal brute force, and every allowed token must
// leave a non-empty mask (or terminate).
// `refine_threshold`: small values make the matcher refine keys (and derive the deeper entries
// from the shallower ones) where the default never would on this vocabulary.
// `precompute`: build every entry ahead (CompiledGrammar::Precompute, on the ASCII vocabulary) and
// check that the walks need no other.
void CheckWalks(const std::string& ebnf, int n_walks, int max_steps,
                size_t refine_threshold = CompiledGrammar::kRefineThreshold,
                size_t* derived = nullptr, bool precompute = false) {
  auto vocab = SyntheticVocabulary(precompute);
  GrammarCompiler compiler(vocab, 512, refine_threshold);
  auto compiled = compiler.CompileEbnf(ebnf);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  size_t precomputed = 0;
  if (precompute) {
    const CompiledGrammar::PrecomputeStats stats = (*compiled)->Precompute(600.0);
    ASSERT_TRUE(stats.complete);
    precomputed = (*compiled)->n_entries();
    EXPECT_EQ(stats.entries, precomputed);
    // A second call finds them all built.
    EXPECT_EQ((*compiled)->Precompute(0.0).entries, 0u);
    EXPECT_TRUE((*compiled)->Precompute(0.0).complete);
  }
  std::mt19937 rng(11);
  for (int w = 0; w < n_walks; ++w) {
    GrammarMatcher m(*compiled);
    std::vector<uint32_t> mask(vocab->n_words());
    for (int step = 0; step < max_steps && !m.IsTerminated(); ++step) {
      m.FillNextTokenBitmask(mask.data());
      ASSERT_EQ(mask, BruteForceMask(m, *vocab)) << "walk " << w << " step " << step;
      ASSERT_FALSE(Bit(mask, kSpecial));
      ASSERT_EQ(Bit(mask, kEos), m.CanEnd());
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < vocab->size(); ++id) {
        if (Bit(mask, id)) allowed.push_back(id);
      }
      ASSERT_FALSE(allowed.empty()) << "dead end at walk " << w << " step " << step;
      // Past half the budget, head for the end.
      int32_t pick = allowed[rng() % allowed.size()];
      if (step > max_steps / 2) {
        int64_t best = INT64_MAX;
        for (int32_t id : allowed) {
          ASSERT_TRUE(m.AcceptToken(id));
          const int64_t c = m.IsTerminated() ? -1 : m.MinCompletionBytes();
          m.Rollback(1);
          if (c < best) best = c, pick = id;
        }
      }
      ASSERT_TRUE(m.AcceptToken(pick));
    }
    EXPECT_TRUE(m.IsTerminated()) << "walk " << w << " did not finish";
  }
  if (derived != nullptr) *derived = (*compiled)->n_derived_entries();
  if (precompute) EXPECT_EQ((*compiled)->n_entries(), precomputed) << "a key Precompute missed";
}

TEST(GrammarMatcher, MaskEqualsBruteForceOnJsonSchema) {
  auto ebnf = JsonSchemaToEbnf(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "n": {"type": "integer", "minimum": -5, "maximum": 120},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
      "x": {"type": ["number", "null"]},
      "extra": {"type": "object", "additionalProperties": {"type": "boolean"}}
    },
    "required": ["name"]
  })");
  ASSERT_TRUE(ebnf.ok()) << ebnf.status().ToString();
  CheckWalks(*ebnf, 12, 40);
  // Refining at 4 uncertain tokens: most keys go deeper, their entries derived from the
  // shallower ones (compiled_grammar.h, "Deeper keys"); every mask still equals brute force.
  size_t derived = 0;
  CheckWalks(*ebnf, 12, 40, 4, &derived);
  EXPECT_GT(derived, 20u);
}

// Long bounded strings: positions with more characters left than any token has bytes share one
// mask entry (compiled_grammar.h, "Bounded repetitions"); the masks stay exact at every position,
// across the point where the shared entries end.
TEST(GrammarMatcher, MaskEqualsBruteForceOnLongBoundedStrings) {
  auto ebnf = JsonSchemaToEbnf(R"({"type": "object", "properties": {
      "a": {"type": "string", "maxLength": 70},
      "b": {"type": "string", "minLength": 2, "maxLength": 45},
      "c": {"type": "array", "items": {"type": "integer"}, "maxItems": 40}},
    "required": ["a", "b"]})");
  ASSERT_TRUE(ebnf.ok()) << ebnf.status().ToString();
  CheckWalks(*ebnf, 8, 70);
  size_t derived = 0;
  CheckWalks(*ebnf, 8, 70, 4, &derived);  // both derivations at once
  EXPECT_GT(derived, 40u);
}

TEST(GrammarMatcher, LongBoundedStringPositionsShareMaskEntries) {
  auto vocab = SyntheticVocabulary();
  GrammarCompiler compiler(vocab);
  auto ebnf = JsonSchemaToEbnf(R"({"type": "string", "maxLength": 200})");
  ASSERT_TRUE(ebnf.ok());
  auto g = compiler.CompileEbnf(*ebnf);
  ASSERT_TRUE(g.ok());
  const int64_t twin = static_cast<int64_t>(vocab->max_token_bytes()) + 2;
  GrammarMatcher m(*g);
  std::vector<uint32_t> mask(m.n_words());
  ASSERT_TRUE(m.AcceptBytes("\""));
  size_t shared = 0;
  for (int written = 0; written <= 200; ++written) {
    m.FillNextTokenBitmask(mask.data());
    ASSERT_EQ(mask, BruteForceMask(m, *vocab)) << written;
    EXPECT_EQ(Bit(mask, kEos + 2 + 'a'), written < 200) << written;
    if (written == 200 - twin) shared = (*g)->n_entries();
    if (written < 200) ASSERT_TRUE(m.AcceptBytes("a"));
  }
  // Every position up to 200 - twin characters written had at least `twin` left: a handful of
  // entries (the key depths), not one per position; the last `twin` positions have their own.
  EXPECT_LE(shared, 6u);
  EXPECT_GE((*g)->n_entries(), shared + static_cast<size_t>(twin) - 2);
  // Those are derived from the shared entry (each mask equal to brute force above).
  EXPECT_GE((*g)->n_derived_entries(), static_cast<size_t>(twin) - 3);
}

// Precompute (compiled_grammar.h, "Precomputed entries") builds every entry the walks ask for
// (character-boundary keys: the ASCII vocabulary never stops inside a character), with the
// default refining and with refining forced at 4 uncertain tokens (keys up to several parents
// deep), on a schema, long bounded strings and recursive JSON; the masks still equal brute force.
TEST(GrammarMatcher, PrecomputeBuildsEveryEntryTheWalksAskFor) {
  for (const char* schema : {R"({"type": "object", "properties": {
        "name": {"type": "string"}, "n": {"type": "integer", "minimum": -5, "maximum": 120},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
        "x": {"type": ["number", "null"]},
        "extra": {"type": "object", "additionalProperties": {"type": "boolean"}}},
        "required": ["name"]})",
                             R"({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 70},
        "c": {"type": "array", "items": {"type": "integer"}, "maxItems": 40}},
        "required": ["a"]})"}) {
    auto ebnf = JsonSchemaToEbnf(schema);
    ASSERT_TRUE(ebnf.ok()) << ebnf.status().ToString();
    CheckWalks(*ebnf, 8, 60, CompiledGrammar::kRefineThreshold, nullptr, true);
    size_t derived = 0;
    CheckWalks(*ebnf, 8, 60, 4, &derived, true);
    EXPECT_GT(derived, 20u);
  }
  CheckWalks(JsonObjectEbnf(), 8, 60, 4, nullptr, true);
}

TEST(GrammarMatcher, MaskEqualsBruteForceOnJsonObjectAndUtf8) {
  CheckWalks(JsonObjectEbnf(), 8, 30);
  CheckWalks(JsonObjectEbnf(), 8, 30, 4);
  CheckWalks("root ::= ([\\u00e0-\\u00ff] | \"a\" | \"\\\"\")+ \"}\"", 6, 20);
}

TEST(GrammarMatcher, RollbackRestoresEarlierMasks) {
  auto vocab = SyntheticVocabulary();
  GrammarCompiler compiler(vocab);
  auto compiled = compiler.CompileJsonObject();
  ASSERT_TRUE(compiled.ok());
  GrammarMatcher m(*compiled);
  std::mt19937 rng(3);
  std::vector<std::vector<uint32_t>> masks;
  std::vector<uint32_t> mask(vocab->n_words());
  for (int step = 0; step < 24 && !m.IsTerminated(); ++step) {
    m.FillNextTokenBitmask(mask.data());
    masks.push_back(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < vocab->size(); ++id) {
      if (Bit(mask, id)) allowed.push_back(id);
    }
    ASSERT_TRUE(m.AcceptToken(allowed[rng() % allowed.size()]));
  }
  const int n = m.n_accepted();
  ASSERT_GE(n, 17);
  m.Rollback(16);
  m.FillNextTokenBitmask(mask.data());
  EXPECT_EQ(mask, masks[n - 16]);
  m.Rollback(n - 16);
  m.FillNextTokenBitmask(mask.data());
  EXPECT_EQ(mask, masks[0]);
}

TEST(GrammarMatcher, EosSpecialTokensAndTermination) {
  auto vocab = SyntheticVocabulary();
  GrammarCompiler compiler(vocab);
  auto compiled = compiler.CompileEbnf("root ::= \"a\" \"b\"?");
  ASSERT_TRUE(compiled.ok());
  GrammarMatcher m(*compiled);
  const int32_t a = 2 + 'a', b = 2 + 'b';
  EXPECT_FALSE(m.AcceptToken(kEos));  // cannot end before "a"
  EXPECT_FALSE(m.AcceptToken(kSpecial));
  EXPECT_FALSE(m.AcceptToken(-1));
  EXPECT_FALSE(m.AcceptToken(vocab->size()));
  EXPECT_EQ(m.n_accepted(), 0);
  ASSERT_TRUE(m.AcceptToken(a));
  EXPECT_TRUE(m.CanEnd());
  std::vector<uint32_t> mask(vocab->n_words());
  m.FillNextTokenBitmask(mask.data());
  EXPECT_TRUE(Bit(mask, kEos));
  EXPECT_TRUE(Bit(mask, b));
  EXPECT_FALSE(Bit(mask, a));
  ASSERT_TRUE(m.AcceptToken(b));
  m.FillNextTokenBitmask(mask.data());
  int n_allowed = 0;
  for (uint32_t w : mask) n_allowed += __builtin_popcount(w);
  EXPECT_EQ(n_allowed, 1);  // only EOS
  ASSERT_TRUE(m.AcceptToken(kEos));
  EXPECT_TRUE(m.IsTerminated());
  EXPECT_FALSE(m.AcceptToken(kEos));
  m.FillNextTokenBitmask(mask.data());
  EXPECT_EQ(std::count(mask.begin(), mask.end(), 0u), static_cast<long>(mask.size()));
  m.Rollback(1);  // undoes EOS
  EXPECT_FALSE(m.IsTerminated());
  EXPECT_TRUE(m.CanEnd());
  EXPECT_EQ(m.n_accepted(), 2);
}

}  // namespace
}  // namespace deepinfer::structured
