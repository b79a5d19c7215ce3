#include "structured/tool_call_grammar.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "structured/char_class.h"
#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "structured/json_schema_formats.h"
#include "structured/json_schema_keywords.h"
#include "structured/regex_converter.h"
#include "tokenizer/chat/chat_tokens.h"

namespace deepinfer::structured {
namespace {

constexpr uint32_t kDsmlBar = 0xFF5C;  // ｜, the bar of every DSML tag
constexpr int kMaxRefHops = 16;
// What follows a parameter's name: its value is raw text or JSON.
constexpr std::string_view kRawValueOpen = "\" string=\"true\">";
constexpr std::string_view kJsonValueOpen = "\" string=\"false\">";

CharClass DsmlBar() {
  CharClass c;
  c.Add(kDsmlBar);
  return c;
}

bool HasBar(const std::string& s) { return s.find("\xEF\xBD\x9C") != std::string::npos; }

Status CheckName(const std::string& what, const std::string& name) {
  if (name.empty()) return InvalidArgument(what + " is empty");
  if (name.find('"') != std::string::npos || HasBar(name) || name.find('\n') != std::string::npos) {
    return InvalidArgument(what + " '" + name + "' contains '\"', a newline or U+FF5C");
  }
  return Status::Ok();
}

// Keywords allowed at the top of a tool's parameters.
bool TopLevelKeyword(const std::string& k) {
  return k == "type" || k == "properties" || k == "required" || k == "additionalProperties" ||
         (Annotations().count(k) > 0 && k != "nullable") || k.rfind("x-", 0) == 0;
}

class ToolGrammar {
 public:
  ToolGrammar(const Json& fn, int index) : fn_(fn), index_(index) {}

  // Appends this tool's rules to *rules; returns its call rule name.
  StatusOr<std::string> Build(std::string* rules) {
    if (!fn_.is_object() || !fn_.contains("name") || !fn_["name"].is_string()) {
      return InvalidArgument("tool " + std::to_string(index_) + ": a function needs a name");
    }
    name_ = fn_["name"].get<std::string>();
    DI_RETURN_IF_ERROR(CheckName("tool name", name_));
    params_ = fn_.contains("parameters") && !fn_["parameters"].is_null() ? fn_["parameters"]
                                                                         : Json::object();
    DI_RETURN_IF_ERROR(CheckTop());
    std::vector<std::string> keys;
    std::vector<bool> required;
    std::set<std::string> req;
    if (params_.contains("required")) {
      for (const Json& r : params_["required"]) req.insert(r.get<std::string>());
    }
    if (params_.contains("properties")) {
      for (auto it = params_["properties"].begin(); it != params_["properties"].end(); ++it) {
        keys.push_back(it.key());
        required.push_back(req.count(it.key()) > 0);
      }
    }
    for (const std::string& r : req) {
      if (std::find(keys.begin(), keys.end(), r) == keys.end()) {
        keys.push_back(r);
        required.push_back(true);
      }
    }
    // One JSON conversion for every parameter written as JSON (shared $ref rules).
    std::vector<std::string> values(keys.size());
    std::vector<Json::json_pointer> json_ptrs;
    std::vector<size_t> json_of;
    for (size_t i = 0; i < keys.size(); ++i) {
      DI_RETURN_IF_ERROR(CheckName("tool '" + name_ + "': parameter name", keys[i]));
      if (!params_.contains("properties") || !params_["properties"].contains(keys[i])) {
        values[i] = EbnfQuote(kJsonValueOpen) + " json_value";
        continue;
      }
      Json::json_pointer ptr = Json::json_pointer("/properties") / keys[i];
      DI_ASSIGN_OR_RETURN(std::optional<std::string> raw, RawString(params_.at(ptr), keys[i]));
      if (raw) {
        values[i] = EbnfQuote(kRawValueOpen) + " " + *raw;
      } else {
        json_of.push_back(i);
        json_ptrs.push_back(ptr);
      }
    }
    JsonSchemaOptions options;
    options.string_excluded = DsmlBar();
    DI_ASSIGN_OR_RETURN(SchemaRules json, JsonSchemaRules(params_, json_ptrs, Prefix(), options));
    for (size_t k = 0; k < json_of.size(); ++k) {
      values[json_of[k]] = EbnfQuote(kJsonValueOpen) + " " + json.roots[k];
    }
    *rules += json.rules;
    // first[i] / after[i]: parameters i.. with nothing / something written before.
    const size_t n = keys.size();
    std::vector<std::string> first(n + 1, "\"\""), after(n + 1, "\"\"");
    for (size_t i = n; i-- > 0;) {
      const std::string p =
          Define(rules, "p" + std::to_string(i),
                 EbnfQuote(std::string(tokenizer::kParameterOpenText) + " name=\"" + keys[i]) +
                     " " + values[i] + " " + EbnfQuote("</｜DSML｜ parameter>"));
      std::string a = "\"\\n\" " + p + " " + after[i + 1];
      std::string f = p + " " + after[i + 1];
      if (!required[i]) a += " | " + after[i + 1], f += " | " + first[i + 1];
      after[i] = Define(rules, "a" + std::to_string(i), a);
      first[i] = Define(rules, "f" + std::to_string(i), f);
    }
    return Define(
        rules, "call",
        EbnfQuote(std::string(tokenizer::kInvokeOpenText) + " name=\"" + name_ + "\">\n") + " " +
            first[0] + " " + EbnfQuote("\n" + std::string(tokenizer::kInvokeCloseText) + ">"));
  }

  const std::string& name() const { return name_; }

 private:
  std::string Prefix() const { return "t" + std::to_string(index_) + "_"; }
  std::string Define(std::string* rules, const std::string& what, const std::string& body) {
    std::string name = Prefix() + "dsml_" + what;
    *rules += name + " ::= " + body + "\n";
    return name;
  }

  Status CheckTop() const {
    const std::string where = "tool '" + name_ + "': parameters";
    if (!params_.is_object()) return InvalidArgument(where + " must be a JSON Schema object");
    for (auto it = params_.begin(); it != params_.end(); ++it) {
      if (!TopLevelKeyword(it.key())) {
        return InvalidArgument(where + ": keyword '" + it.key() +
                               "' is not supported at the top level (an object schema with "
                               "properties is needed)");
      }
    }
    if (params_.contains("type") && params_["type"] != "object") {
      return InvalidArgument(where + " must have type \"object\"");
    }
    if (params_.contains("properties") && !params_["properties"].is_object()) {
      return InvalidArgument(where + ".properties must be an object");
    }
    if (params_.contains("required")) {
      if (!params_["required"].is_array()) return InvalidArgument(where + ".required: an array");
      for (const Json& r : params_["required"]) {
        if (!r.is_string()) return InvalidArgument(where + ".required: strings only");
      }
    }
    return Status::Ok();
  }

  // The schema behind top-level $refs (a bare {"$ref"} with annotations only).
  StatusOr<const Json*> Deref(const Json& s) const {
    const Json* at = &s;
    for (int hop = 0; at->is_object() && at->contains("$ref"); ++hop) {
      for (auto it = at->begin(); it != at->end(); ++it) {
        if (it.key() != "$ref" && !Annotations().count(it.key())) return at;  // $ref + siblings
      }
      const Json& ref = (*at)["$ref"];
      if (hop >= kMaxRefHops || !ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) {
        return at;  // the JSON conversion reports it
      }
      try {
        at = &params_.at(Json::json_pointer(ref.get<std::string>().substr(1)));
      } catch (const std::exception&) {
        return InvalidArgument("$ref '" + ref.get<std::string>() + "' does not resolve");
      }
    }
    return at;
  }

  // The raw-text expression when the schema admits strings only; nullopt: write it as JSON.
  StatusOr<std::optional<std::string>> RawString(const Json& schema, const std::string& key) {
    DI_ASSIGN_OR_RETURN(const Json* s, Deref(schema));
    if (!s->is_object()) return std::optional<std::string>();
    const std::string where = "tool '" + name_ + "', parameter '" + key + "'";
    for (const char* combinator : {"anyOf", "oneOf", "allOf", "$ref"}) {
      if (s->contains(combinator)) return std::optional<std::string>();
    }
    std::optional<std::vector<Json>> values;
    if (s->contains("const")) values = std::vector<Json>{(*s)["const"]};
    if (!values && s->contains("enum") && (*s)["enum"].is_array()) {
      values = std::vector<Json>((*s)["enum"].begin(), (*s)["enum"].end());
    }
    const bool typed_string =
        s->contains("type") && (*s)["type"] == "string" && !s->value("nullable", false);
    if (values) {
      std::string body;
      for (const Json& v : *values) {
        if (!v.is_string()) {
          if (typed_string) continue;  // filtered by type, as the JSON grammar does
          return std::optional<std::string>();
        }
        const std::string text = v.get<std::string>();
        if (text.find(tokenizer::kParameterCloseText) != std::string::npos) {
          return InvalidArgument(where + ": a value contains a DSML tag");
        }
        body += (body.empty() ? "" : " | ") + EbnfQuote(text);
      }
      if (body.empty()) return InvalidArgument(where + ": no enum value has the schema's type");
      return std::optional<std::string>("(" + body + ")");
    }
    if (!typed_string) return std::optional<std::string>();
    for (auto it = s->begin(); it != s->end(); ++it) {
      const std::string& k = it.key();
      if (!Handled().count(k) && !Annotations().count(k) && k.rfind("x-", 0) != 0) {
        return InvalidArgument("JSON Schema keyword '" + k + "' is not supported");
      }
    }
    CharClass chars = DsmlBar().Complement();
    const bool has_len = s->contains("minLength") || s->contains("maxLength");
    if (s->contains("format")) {
      if (s->contains("pattern") || has_len || !(*s)["format"].is_string()) {
        return InvalidArgument(where +
                               ": 'format' together with 'pattern' or a length is not supported");
      }
      DI_ASSIGN_OR_RETURN(std::string f, FormatEbnf((*s)["format"].get<std::string>()));
      return std::optional<std::string>(f);
    }
    if (s->contains("pattern")) {
      if (has_len || !(*s)["pattern"].is_string()) {
        return InvalidArgument(where + ": 'pattern' together with a length is not supported");
      }
      const CharClass bar = DsmlBar();
      DI_ASSIGN_OR_RETURN(std::string e,
                          RegexToEbnfExpression((*s)["pattern"].get<std::string>(),
                                                /*json_string_content=*/false, &bar));
      return std::optional<std::string>("(" + e + ")");
    }
    if (!has_len) return std::optional<std::string>(chars.ToEbnf() + "*");
    const Json lo_j = s->value("minLength", Json(0)), hi_j = s->value("maxLength", Json(-1));
    if (!lo_j.is_number_integer() || !hi_j.is_number_integer()) {
      return InvalidArgument(where + ": minLength and maxLength must be integers");
    }
    const int64_t lo = lo_j.get<int64_t>(), hi = hi_j.get<int64_t>();
    if (lo < 0 || (hi >= 0 && hi < lo))
      return InvalidArgument(where + ": minLength above maxLength");
    if (lo > 10000 || hi > 10000) return InvalidArgument(where + ": string lengths above 10000");
    return std::optional<std::string>(chars.ToEbnf() + "{" + std::to_string(lo) + "," +
                                      (hi >= 0 ? std::to_string(hi) : "") + "}");
  }

  const Json& fn_;
  int index_;
  std::string name_;
  Json params_;
};

}  // namespace

StatusOr<std::string> DsmlToolCallsEbnf(const Json& functions, const std::string& forced_name,
                                        bool parallel) {
  if (!functions.is_array() || functions.empty()) {
    return InvalidArgument("a forced tool call needs at least one tool");
  }
  std::string rules;
  std::vector<std::string> calls;
  std::string forced_call;
  try {
    for (size_t i = 0; i < functions.size(); ++i) {
      ToolGrammar tool(functions[i], static_cast<int>(i));
      DI_ASSIGN_OR_RETURN(std::string call, tool.Build(&rules));
      if (!forced_name.empty() && tool.name() == forced_name) forced_call = call;
      calls.push_back(std::move(call));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("malformed tool definition: ") + e.what());
  }
  std::string body;
  if (!forced_name.empty()) {
    if (forced_call.empty()) {
      return InvalidArgument("tool_choice names '" + forced_name + "', which is not in tools");
    }
    body = forced_call;
  } else {
    std::string any;
    for (const std::string& c : calls) any += (any.empty() ? "" : " | ") + c;
    rules += "dsml_any_call ::= " + any + "\n";
    body = parallel ? "dsml_any_call (\"\\n\" dsml_any_call)*" : "dsml_any_call";
  }
  JsonSchemaOptions options;
  options.string_excluded = DsmlBar();
  return "root ::= " + EbnfQuote(std::string(tokenizer::kCallsOpenerText) + ">\n") + " " + body +
         " " + EbnfQuote("\n" + std::string(tokenizer::kCallsEndText)) + "\n" + rules +
         JsonBaseRules(options);
}

}  // namespace deepinfer::structured
