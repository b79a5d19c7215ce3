// api::AttachGrammar: the one place a request gets its grammar, with and without grammar support.
#include "api/structured_outputs.h"
#include "api/response_format.h"

#include <gtest/gtest.h>

#include <memory>

#include "structured/grammar_matcher.h"

namespace deepinfer::api {
namespace {

constexpr int64_t kModelVocab = 129280;  // the released model's vocabulary (> the tokenizer's)

// The tokenizer and the compiler over it, built once, destroyed at exit in reverse order (the
// compiler refers to the tokenizer).
struct V3Compiler {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<StructuredOutputs> outputs;
};

StructuredOutputs* V3Outputs() {
  static V3Compiler v3 = [] {
    V3Compiler v;
    auto tok = tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    if (!tok.ok()) return v;
    v.tok = std::move(tok).value();
    auto created = StructuredOutputs::Create(*v.tok, kModelVocab);
    if (created.ok()) v.outputs = std::move(created).value();
    return v;
  }();
  return v3.outputs.get();
}

TEST(AttachGrammar, NoConstraintLeavesTheRequestFree) {
  engine::Request r;
  EXPECT_TRUE(AttachGrammar(nullptr, nlohmann::json(), false, &r).ok());
  EXPECT_TRUE(AttachGrammar(nullptr, nlohmann::json::object(), true, &r).ok());
  EXPECT_EQ(r.grammar, nullptr);
}

TEST(AttachGrammar, WithoutGrammarSupportAConstraintIsRefused) {
  engine::Request r;
  const Status s = AttachGrammar(nullptr, {{"regex", "a+"}}, false, &r);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "structured outputs are not available");
}

TEST(AttachGrammar, CompilesTheConstraint) {
  StructuredOutputs* outputs = V3Outputs();
  ASSERT_NE(outputs, nullptr) << "tokenizer unavailable (run scripts/install-deps.sh)";
  engine::Request r;
  ASSERT_TRUE(
      AttachGrammar(outputs, {{"response_format", {{"type", "json_object"}}}}, false, &r).ok());
  ASSERT_NE(r.grammar, nullptr);
  EXPECT_EQ(r.grammar->vocabulary().size(), kModelVocab);
  EXPECT_FALSE(r.grammar_start_token.has_value());

  engine::Request text;  // response_format text constrains nothing
  ASSERT_TRUE(AttachGrammar(outputs, {{"response_format", {{"type", "text"}}}}, false, &text).ok());
  EXPECT_EQ(text.grammar, nullptr);

  engine::Request two;
  EXPECT_EQ(
      AttachGrammar(outputs, {{"regex", "a"}, {"grammar", "root ::= \"a\""}}, false, &two).code(),
      StatusCode::kInvalidArgument);
}

// The constraint is a nlohmann::json (sorted keys); the schema's own property order must survive
// (properties are generated in schema order): "z" before "a" here, as the request wrote them.
TEST(AttachGrammar, SchemaPropertiesKeepTheRequestsOrder) {
  StructuredOutputs* outputs = V3Outputs();
  ASSERT_NE(outputs, nullptr) << "tokenizer unavailable (run scripts/install-deps.sh)";
  const auto format = nlohmann::ordered_json::parse(
      R"({"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object",
          "properties": {"z": {"type": "integer"}, "a": {"type": "integer"}},
          "required": ["z", "a"], "additionalProperties": false}}})");
  const nlohmann::json field = ResponseFormatField(format);
  engine::Request r;
  ASSERT_TRUE(AttachGrammar(outputs, {{"response_format", field}}, false, &r).ok());
  ASSERT_NE(r.grammar, nullptr);
  structured::GrammarMatcher in_order(r.grammar);
  EXPECT_TRUE(in_order.AcceptBytes(R"({"z")"));
  structured::GrammarMatcher sorted(r.grammar);
  EXPECT_FALSE(sorted.AcceptBytes(R"({"a")"));
}

// set_json_schema_strict(false) reaches the request's grammar: an extra key is then allowed, and
// the grammar is not the strict one cached for the same schema text.
TEST(AttachGrammar, NotStrictSchemasAllowKeysTheSchemaDoesNotList) {
  StructuredOutputs* outputs = V3Outputs();
  ASSERT_NE(outputs, nullptr) << "tokenizer unavailable (run scripts/install-deps.sh)";
  const nlohmann::json constraint = {
      {"response_format",
       {{"type", "json_schema"},
        {"json_schema",
         {{"name", "s"},
          {"schema", {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}}}}}}}};
  const auto extra_key_allowed = [&](bool strict) {
    outputs->set_json_schema_strict(strict);
    engine::Request r;
    EXPECT_TRUE(AttachGrammar(outputs, constraint, false, &r).ok());
    structured::GrammarMatcher m(r.grammar);
    return m.AcceptBytes(R"({"a": 1, "b")");
  };
  EXPECT_FALSE(extra_key_allowed(true));
  EXPECT_TRUE(extra_key_allowed(false));
  EXPECT_FALSE(extra_key_allowed(true));
  outputs->set_json_schema_strict(true);
}

TEST(AttachGrammar, ThinkingModeStartsAfterThinkEnd) {
  StructuredOutputs* outputs = V3Outputs();
  ASSERT_NE(outputs, nullptr);
  engine::Request r;
  const Status s = AttachGrammar(outputs, {{"regex", "a+"}}, /*thinking=*/true, &r);
  if (outputs->think_end_id()) {
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(r.grammar_start_token, outputs->think_end_id());
  } else {  // the DeepSeek-V3 tokenizer has no </think>
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  }
}

}  // namespace
}  // namespace deepinfer::api
