// Structured-output fields of a request, as generate --batch and the server read them:
//   "response_format": {"type": "text"} | {"type": "json_object"} |
//                      {"type": "json_schema", "json_schema": {"schema": {...}, ...}}
//   "regex": "<pattern>"          "grammar": "<EBNF text, start rule root>"
//   "tool_calls": {"functions": "<JSON text: OpenAI function objects>", "name": "<forced tool>"
//                  or "" (any tool), "parallel": several calls allowed}   (the server's forced
//                  tool_choice: the DSML tool-call grammar, structured/tool_call_grammar.h)
// At most one of them. Returns null when none constrains the output.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "structured/compiled_grammar.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::tools {

// Compiles grammars over a tokenizer's vocabulary at the model's vocabulary size, cached by
// content.
class StructuredOutputs {
 public:
  static StatusOr<std::unique_ptr<StructuredOutputs>> Create(const tokenizer::Tokenizer& tok,
                                                             int64_t model_vocab);
  StatusOr<std::shared_ptr<const structured::CompiledGrammar>> FromRequest(
      const nlohmann::json& body);
  structured::GrammarCompiler& compiler() { return *compiler_; }

 private:
  StatusOr<std::shared_ptr<const structured::CompiledGrammar>> ToolCalls(
      const nlohmann::json& spec);
  std::unique_ptr<structured::GrammarCompiler> compiler_;
};

}  // namespace deepinfer::tools
