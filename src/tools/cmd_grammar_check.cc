// `deepinfer grammar-check --tokenizer DIR`: does a constraint accept these instances? JSON Lines
// on stdin, one answer per line on stdout (docs/structured_outputs.md):
//
//   {"schema": <JSON Schema>, "instances": [<JSON value>, ...]}
//   {"regex": "<pattern>",    "instances": ["<string>", ...]}
//   {"grammar": "<EBNF, start rule root>", "instances": ["<string>", ...]}
//     -> {"accepted": [true, false, ...]}   or   {"error": "<why the constraint is refused>"}
//
// Each instance is written as the engine would generate it (a JSON value compactly, as
// nlohmann::json::dump writes it but a whole number without an exponent, raw UTF-8; a string as it
// is), tokenized with DIR's tokenizer, and walked token by token through a GrammarMatcher of the
// compiled constraint, the stop token (EOS) last: accepted when every token and the stop token are
// allowed. So it checks exactly what constrained decoding would let through, tokenization included.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/structured_outputs.h"
#include "structured/grammar_matcher.h"
#include "structured/json_schema_keywords.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli.h"
#include "tools/engine_setup.h"
#include "tools/json_lines.h"
#include "tools/tokenizer_filter.h"

namespace deepinfer::tools {
namespace {

using Json = nlohmann::ordered_json;

StatusOr<bool> Accepts(const tokenizer::Tokenizer& tok,
                       const std::shared_ptr<const structured::CompiledGrammar>& grammar,
                       const std::string& text) {
  DI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(text, /*add_special_tokens=*/false));
  structured::GrammarMatcher m(grammar);
  for (const int32_t id : ids) {
    if (!m.AcceptToken(id)) return false;
  }
  if (const std::optional<int32_t> eos = tok.eos_id()) return m.AcceptToken(*eos);
  return m.CanEnd();
}

// `v` compactly as nlohmann::json::dump writes it, except that a whole number held as a double
// (9007199254740992.0 in the input) is written 9007199254740992.0, as Python and JavaScript write
// it, not 9.007199254740992e+15: the grammar's numbers have no exponent.
std::string Compact(const Json& v) {
  if (const std::optional<int64_t> whole = structured::WholeDouble(v)) {
    return std::to_string(*whole) + ".0";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + Compact(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += (out.size() > 1 ? "," : "") + Json(it.key()).dump() + ":" + Compact(it.value());
    }
    return out + "}";
  }
  return v.dump();
}

StatusOr<Json> Handle(const tokenizer::Tokenizer& tok, api::StructuredOutputs& outputs,
                      const Json& record) {
  structured::GrammarCompiler& compiler = outputs.compiler();
  const auto instances = record.find("instances");
  if (instances == record.end() || !instances->is_array()) {
    return InvalidArgument("record needs an array \"instances\"");
  }
  std::shared_ptr<const structured::CompiledGrammar> grammar;
  bool json_instances = false;
  if (const auto schema = record.find("schema"); schema != record.end()) {
    DI_ASSIGN_OR_RETURN(grammar,
                        compiler.CompileJsonSchema(schema->dump(), outputs.schema_options()));
    json_instances = true;
  } else if (const auto regex = record.find("regex"); regex != record.end() && regex->is_string()) {
    DI_ASSIGN_OR_RETURN(grammar, compiler.CompileRegex(regex->get_ref<const std::string&>()));
  } else if (const auto ebnf = record.find("grammar"); ebnf != record.end() && ebnf->is_string()) {
    DI_ASSIGN_OR_RETURN(grammar, compiler.CompileEbnf(ebnf->get_ref<const std::string&>()));
  } else {
    return InvalidArgument(
        "record needs \"schema\" (a JSON Schema), \"regex\" or \"grammar\" (strings)");
  }
  Json accepted = Json::array();
  for (const Json& instance : *instances) {
    std::string text;
    if (json_instances) {
      text = Compact(instance);
    } else if (instance.is_string()) {
      text = instance.get<std::string>();
    } else {
      return InvalidArgument("regex and grammar instances must be strings, got " + instance.dump());
    }
    DI_ASSIGN_OR_RETURN(const bool ok, Accepts(tok, grammar, text));
    accepted.push_back(ok);
  }
  return Json{{"accepted", std::move(accepted)}};
}

}  // namespace

void RegisterGrammarCheck(CLI::App& app, int* exit_code) {
  auto strict = std::make_shared<std::string>("on");
  CLI::App* cmd = RegisterTokenizerFilter(
      app, exit_code, "grammar-check",
      "Check instances against a JSON Schema, regex or EBNF grammar as constrained decoding would "
      "(JSON Lines)",
      [strict](const tokenizer::Tokenizer& tok) -> StatusOr<JsonLineHandler> {
        DI_ASSIGN_OR_RETURN(std::shared_ptr<api::StructuredOutputs> outputs,
                            api::StructuredOutputs::Create(tok, tok.n_ids()));
        outputs->set_json_schema_strict(*strict == "on");
        return JsonLineHandler(
            [&tok, outputs](const Json& record) { return Handle(tok, *outputs, record); });
      });
  AddJsonSchemaStrictFlag(cmd, strict.get());
}

}  // namespace deepinfer::tools
