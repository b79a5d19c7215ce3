// `deepinfer parse-output`: JSON Lines on stdin, one parsed assistant message per line on stdout.
//
// Input record: {"text": generated text, "thinking": bool (default false)} — the chat-v41
// parse-fixture format; other keys are ignored. Output: {"reasoning_content", "content",
// "tool_calls": [{"name", "arguments"}]} (arguments: a JSON text, string="false" values verbatim),
// or {"error": "..."} for output the V4.1 reference parser rejects.
#include <CLI/CLI.hpp>
#include <iostream>

#include "tokenizer/chat/output_parser.h"
#include "tools/cli.h"
#include "tools/json_lines.h"

namespace deepinfer::tools {
namespace {

StatusOr<nlohmann::ordered_json> ParseRecord(const nlohmann::ordered_json& record) {
  auto text = record.find("text");
  if (text == record.end() || !text->is_string()) {
    return InvalidArgument("record needs \"text\": string");
  }
  bool thinking = false;
  if (auto t = record.find("thinking"); t != record.end() && !t->is_null()) {
    if (!t->is_boolean()) return InvalidArgument("\"thinking\" must be true or false");
    thinking = t->get<bool>();
  }
  DI_ASSIGN_OR_RETURN(tokenizer::ParsedCompletion parsed,
                      tokenizer::ParseCompletionV41(text->get_ref<const std::string&>(), thinking));
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const auto& call : parsed.tool_calls) {
    calls.push_back({{"name", call.name}, {"arguments", call.arguments}});
  }
  return nlohmann::ordered_json{{"reasoning_content", parsed.reasoning_content},
                                {"content", parsed.content},
                                {"tool_calls", std::move(calls)}};
}

}  // namespace

void RegisterParseOutput(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "parse-output",
      "Parse generated V4.1 text into reasoning, content and tool calls (JSON Lines)");
  cmd->callback([exit_code] {
    RunJsonLines(std::cin, std::cout, ParseRecord);
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
