// Structured outputs of a request: the compiler of the structured-output fields (the server's
// ChatRequest::constraint, a `generate --batch` line's fields) and the one place a request gets
// its grammar.
//
// The fields, at most one of them:
//   "response_format": {"type": "text"} | {"type": "json_object"} |
//                      {"type": "json_schema", "json_schema": {"schema": {...}, ...}}
//   "regex": "<pattern>"          "grammar": "<EBNF text, start rule root>"
//   "tool_calls": {"functions": "<JSON text: OpenAI function objects>", "name": "<forced tool>"
//                  or "" (any tool), "parallel": several calls allowed}   (the server's forced
//                  tool_choice: the DSML tool-call grammar, structured/tool_call_grammar.h)
//
// Threads: a StructuredOutputs is used from one thread at a time (the server's I/O thread, or the
// command's); the CompiledGrammars it returns are immutable and may go to the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/status.h"
#include "engine/request.h"
#include "structured/compiled_grammar.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::api {

// Compiles grammars over a tokenizer's vocabulary at the model's vocabulary size, cached by
// content.
class StructuredOutputs {
 public:
  static StatusOr<std::unique_ptr<StructuredOutputs>> Create(const tokenizer::Tokenizer& tok,
                                                             int64_t model_vocab);
  // The grammar the fields of `body` ask for; null when none constrains the output (no field, or
  // response_format text). InvalidArgument: several fields, an invalid schema / regex / grammar.
  StatusOr<std::shared_ptr<const structured::CompiledGrammar>> FromRequest(
      const nlohmann::json& body);
  structured::GrammarCompiler& compiler() { return *compiler_; }
  // JSON Schema compilation (structured::JsonSchemaOptions::strict; default on); off: the
  // specification's reading (extra keys where additionalProperties is absent, ...).
  void set_json_schema_strict(bool strict) { schema_options_.strict = strict; }
  const structured::JsonSchemaOptions& schema_options() const { return schema_options_; }
  // The tokenizer's </think> token, where a constraint starts in thinking mode (absent when the
  // tokenizer has none, as the bundled DeepSeek-V3 one).
  std::optional<int32_t> think_end_id() const { return think_end_id_; }

 private:
  StatusOr<std::shared_ptr<const structured::CompiledGrammar>> ToolCalls(
      const nlohmann::json& spec);
  std::unique_ptr<structured::GrammarCompiler> compiler_;
  std::optional<int32_t> think_end_id_;
  structured::JsonSchemaOptions schema_options_;
};

// Sets request->grammar from `constraint` (the structured-output fields; null or {} = none), and
// in thinking mode request->grammar_start_token (the constraint starts after </think>). Errors:
// Unimplemented when `outputs` is null (no grammar support) or, in thinking mode, the tokenizer
// has no </think>; FromRequest's errors.
Status AttachGrammar(StructuredOutputs* outputs, const nlohmann::json& constraint, bool thinking,
                     engine::Request* request);

}  // namespace deepinfer::api
