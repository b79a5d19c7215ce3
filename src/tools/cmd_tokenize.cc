// `deepinfer tokenize --tokenizer DIR`: JSON Lines on stdin, one answer per line on stdout.
//
//   {"kind": "encode", "text": "...", "add_special_tokens"?: bool}  -> {"ids": [...]}
//       (BOS/EOS only with add_special_tokens true, as DIR/tokenizer_config.json says)
//   {"kind": "decode", "ids": [...], "skip_special_tokens"?: bool}  -> {"text": "..."}
//       (skip_special_tokens defaults to false)
// A bad record (invalid UTF-8, an unknown id, a missing field) gives {"error": "..."} on its line.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tools/cli.h"
#include "tools/json_lines.h"
#include "tools/tokenizer_filter.h"

namespace deepinfer::tools {
namespace {

using Json = nlohmann::ordered_json;

StatusOr<bool> OptionalBool(const Json& record, const char* key) {
  const auto it = record.find(key);
  if (it == record.end() || it->is_null()) return false;
  if (!it->is_boolean()) return InvalidArgument(std::string("\"") + key + "\" must be a boolean");
  return it->get<bool>();
}

StatusOr<Json> Handle(const tokenizer::Tokenizer& tok, const Json& record) {
  const auto kind = record.find("kind");
  if (kind == record.end() || !kind->is_string()) {
    return InvalidArgument("record needs \"kind\": \"encode\" or \"decode\"");
  }
  if (*kind == "encode") {
    const auto text = record.find("text");
    if (text == record.end() || !text->is_string()) {
      return InvalidArgument("encode record needs a string \"text\"");
    }
    DI_ASSIGN_OR_RETURN(bool add_special, OptionalBool(record, "add_special_tokens"));
    DI_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        tok.Encode(text->get_ref<const std::string&>(), add_special));
    return Json{{"ids", ids}};
  }
  if (*kind == "decode") {
    const auto ids_it = record.find("ids");
    if (ids_it == record.end() || !ids_it->is_array()) {
      return InvalidArgument("decode record needs an array \"ids\"");
    }
    std::vector<int32_t> ids;
    ids.reserve(ids_it->size());
    for (const Json& v : *ids_it) {
      if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
        return InvalidArgument("\"ids\" must hold integers, got " + v.dump());
      }
      ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
    DI_ASSIGN_OR_RETURN(bool skip, OptionalBool(record, "skip_special_tokens"));
    DI_ASSIGN_OR_RETURN(std::string text, tok.Decode(ids, skip));
    return Json{{"text", text}};
  }
  return InvalidArgument("unknown kind " + kind->dump() + " (expected \"encode\" or \"decode\")");
}

}  // namespace

void RegisterTokenize(CLI::App& app, int* exit_code) {
  RegisterTokenizerFilter(
      app, exit_code, "tokenize", "Encode/decode JSON Lines records with a tokenizer",
      [](const tokenizer::Tokenizer& tok) -> StatusOr<JsonLineHandler> {
        return JsonLineHandler([&tok](const Json& record) { return Handle(tok, record); });
      });
}

}  // namespace deepinfer::tools
