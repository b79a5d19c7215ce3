// Helpers for the structured-output tests: a byte vocabulary (one token per byte value, so any
// string can be fed) and whole-string matching.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/vocabulary.h"

namespace deepinfer::structured::testing {

// 256 single-byte tokens, then EOS (id 256).
inline std::shared_ptr<const Vocabulary> ByteVocabulary() {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  bytes.emplace_back("<eos>");
  std::vector<bool> usable(bytes.size(), true);
  return Vocabulary::Create(std::move(bytes), std::move(usable), {256}).value();
}

// Whether the grammar matches `text` exactly (every byte accepted and the grammar can end).
inline bool FullMatch(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.AcceptBytes(text) && m.CanEnd();
}

// JsonSchemaOptions with strict off (the specification's reading).
inline JsonSchemaOptions NotStrict() {
  JsonSchemaOptions options;
  options.strict = false;
  return options;
}

// A JSON Schema compiled over the byte vocabulary (a failure is a test failure and nullptr).
inline std::shared_ptr<const CompiledGrammar> Schema(const std::string& schema,
                                                     const JsonSchemaOptions& options = {}) {
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileJsonSchema(schema, options);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

// Bit `id` of a token bitmask (32 ids a word, lowest bit first).
inline bool Bit(const std::vector<uint32_t>& bits, int32_t id) {
  return (bits[id >> 5] >> (id & 31)) & 1;
}

// Whether `text` is a prefix of some match.
inline bool PrefixMatch(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.AcceptBytes(text);
}

}  // namespace deepinfer::structured::testing
