#include "api/structured_outputs.h"

#include <string>

#include "structured/tool_call_grammar.h"
#include "structured/vocabulary.h"
#include "tokenizer/chat/chat_tokens.h"

namespace deepinfer::api {

StatusOr<std::unique_ptr<StructuredOutputs>> StructuredOutputs::Create(
    const tokenizer::Tokenizer& tok, int64_t model_vocab) {
  DI_ASSIGN_OR_RETURN(
      auto vocab, structured::Vocabulary::FromTokenizer(tok, static_cast<int32_t>(model_vocab)));
  auto s = std::unique_ptr<StructuredOutputs>(new StructuredOutputs());
  s->compiler_ = std::make_unique<structured::GrammarCompiler>(std::move(vocab));
  if (auto id = tok.AddedTokenId(tokenizer::kThinkEndText); id.ok()) s->think_end_id_ = *id;
  return s;
}

StatusOr<std::shared_ptr<const structured::CompiledGrammar>> StructuredOutputs::ToolCalls(
    const nlohmann::json& spec) {
  if (!spec.is_object() || !spec.contains("functions") || !spec["functions"].is_string()) {
    return InvalidArgument("tool_calls must be {\"functions\": \"<JSON text>\", \"name\"?, ...}");
  }
  const nlohmann::ordered_json functions = nlohmann::ordered_json::parse(
      spec["functions"].get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (functions.is_discarded()) return InvalidArgument("tool_calls.functions is not JSON");
  std::string name;
  if (spec.contains("name") && !spec["name"].is_null()) {
    if (!spec["name"].is_string()) return InvalidArgument("tool_calls.name must be a string");
    name = spec["name"].get<std::string>();
  }
  bool parallel = true;
  if (spec.contains("parallel") && spec["parallel"].is_boolean()) {
    parallel = spec["parallel"].get<bool>();
  }
  DI_ASSIGN_OR_RETURN(std::string ebnf, structured::DsmlToolCallsEbnf(functions, name, parallel));
  return compiler_->CompileEbnf(ebnf);
}

StatusOr<std::shared_ptr<const structured::CompiledGrammar>> StructuredOutputs::FromRequest(
    const nlohmann::json& body) {
  const bool rf = body.contains("response_format") && !body["response_format"].is_null();
  const bool re = body.contains("regex") && !body["regex"].is_null();
  const bool gr = body.contains("grammar") && !body["grammar"].is_null();
  const bool tc = body.contains("tool_calls") && !body["tool_calls"].is_null();
  if (rf + re + gr + tc > 1) {
    return InvalidArgument("give at most one of response_format, regex, grammar and a forced tool");
  }
  if (tc) return ToolCalls(body["tool_calls"]);
  if (re) {
    if (!body["regex"].is_string()) return InvalidArgument("regex must be a string");
    return compiler_->CompileRegex(body["regex"].get<std::string>());
  }
  if (gr) {
    if (!body["grammar"].is_string()) return InvalidArgument("grammar must be a string (EBNF)");
    return compiler_->CompileEbnf(body["grammar"].get<std::string>());
  }
  if (!rf) return std::shared_ptr<const structured::CompiledGrammar>();
  const nlohmann::json& f = body["response_format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
    return InvalidArgument("response_format must be an object with a string \"type\"");
  }
  const std::string type = f["type"].get<std::string>();
  if (type == "text") return std::shared_ptr<const structured::CompiledGrammar>();
  if (type == "json_object") return compiler_->CompileJsonObject();
  if (type == "json_schema") {
    if (!f.contains("json_schema") || !f["json_schema"].is_object()) {
      return InvalidArgument("response_format.json_schema must be an object");
    }
    const nlohmann::json& js = f["json_schema"];
    if (!js.contains("schema"))
      return InvalidArgument("response_format.json_schema.schema is missing");
    if (!js["schema"].is_object() && !js["schema"].is_boolean()) {
      return InvalidArgument("response_format.json_schema.schema must be an object");
    }
    if (js.contains("schema_text") && js["schema_text"].is_string()) {
      return compiler_->CompileJsonSchema(js["schema_text"].get<std::string>(), schema_options_);
    }
    return compiler_->CompileJsonSchema(js["schema"].dump(), schema_options_);
  }
  return InvalidArgument("response_format.type must be text, json_object or json_schema, got \"" +
                         type + "\"");
}

Status AttachGrammar(StructuredOutputs* outputs, const nlohmann::json& constraint, bool thinking,
                     engine::Request* request) {
  if (constraint.is_null() || constraint.empty()) return Status::Ok();
  if (!outputs) return Unimplemented("structured outputs are not available");
  DI_ASSIGN_OR_RETURN(request->grammar, outputs->FromRequest(constraint));
  if (request->grammar && thinking) {
    if (!outputs->think_end_id()) {
      return Unimplemented(
          "structured outputs in thinking mode need a tokenizer with a </think> token");
    }
    request->grammar_start_token = outputs->think_end_id();
  }
  return Status::Ok();
}

}  // namespace deepinfer::api
