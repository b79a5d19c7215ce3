// api::AttachGrammar: the one place a request gets its grammar, with and without grammar support.
#include "api/structured_outputs.h"

#include <gtest/gtest.h>

#include <memory>

namespace deepinfer::api {
namespace {

constexpr int64_t kModelVocab = 129280;  // the released model's vocabulary (> the tokenizer's)

StructuredOutputs* V3Outputs() {
  static StructuredOutputs* outputs = [] {
    auto tok = tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    if (!tok.ok()) return static_cast<StructuredOutputs*>(nullptr);
    auto* kept = std::move(tok).value().release();  // outlives the compiler
    auto created = StructuredOutputs::Create(*kept, kModelVocab);
    return created.ok() ? std::move(created).value().release() : nullptr;
  }();
  return outputs;
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
