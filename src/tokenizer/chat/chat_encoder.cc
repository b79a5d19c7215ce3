#include "tokenizer/chat/chat_encoder.h"

#include <algorithm>
#include <utility>

#include "tokenizer/chat/python_json.h"

namespace deepinfer::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kToolsTemplateHead =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user's question. You can invoke tools "
    "by writing a \"<｜DSML｜ calls>\" block like the following:\n\n"
    "<｜DSML｜ calls>\n"
    "<｜DSML｜ invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜ parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE"
    "</｜DSML｜ parameter>\n"
    "...\n"
    "</｜DSML｜ invoke>\n"
    "<｜DSML｜ invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜ invoke>\n"
    "</｜DSML｜ calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types "
    "(numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning "
    "inside <think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";
constexpr std::string_view kToolsTemplateTail =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke "
    "tool calls.\n";
constexpr std::string_view kResponseFormatHead =
    "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

constexpr std::pair<std::string_view, std::string_view> kTaskTokens[] = {
    {"action", "<｜action｜>"}, {"query", "<｜query｜>"}, {"authority", "<｜authority｜>"},
    {"domain", "<｜domain｜>"}, {"title", "<｜title｜>"}, {"read_url", "<｜read_url｜>"},
};

StatusOr<std::string_view> TaskToken(const std::string& task) {
  for (const auto& [name, token] : kTaskTokens) {
    if (name == task) return token;
  }
  return InvalidArgument("invalid task \"" + task +
                         "\": expected action, query, authority, domain, title or read_url");
}

// The effort number for the "Reasoning Effort: N" line.
StatusOr<int> EffortBudget(const Json& effort) {
  if (effort.is_null()) return 75;
  if (effort.is_number_integer() || effort.is_number_unsigned()) {
    const int64_t v = effort.is_number_unsigned()
                          ? static_cast<int64_t>(std::min<uint64_t>(effort.get<uint64_t>(), 1000))
                          : effort.get<int64_t>();
    if (v >= 1 && v <= 100) return static_cast<int>(v);
  } else if (effort.is_string()) {
    const auto& s = effort.get_ref<const std::string&>();
    if (s == "low") return 50;
    if (s == "high") return 75;
    if (s == "max") return 100;
  }
  return InvalidArgument("invalid reasoning_effort " + effort.dump() +
                         ": expected an integer 1-100 or one of \"low\", \"high\", \"max\"");
}

std::string RenderTools(const Json& functions) {
  std::string out(kToolsTemplateHead);
  bool first = true;
  for (const Json& fn : functions) {
    if (!first) out.push_back('\n');
    first = false;
    out += PyJsonDumps(fn);
  }
  out += kToolsTemplateTail;
  return out;
}

// The reference's encode_arguments_to_dsml: an object is used as is; a string is JSON-decoded up
// to twice (double-encoded arguments); anything that is not an object by then becomes
// {"arguments": <the original value>}.
std::string RenderArguments(const Json& arguments) {
  Json decoded = arguments;
  if (!decoded.is_object()) {
    for (int round = 0; round < 2 && decoded.is_string(); ++round) {
      Json next = Json::parse(decoded.get_ref<const std::string&>(), nullptr,
                              /*allow_exceptions=*/false);
      if (next.is_discarded()) break;
      decoded = std::move(next);
    }
    if (!decoded.is_object()) decoded = Json{{"arguments", arguments}};
  }
  std::string out;
  bool first = true;
  for (const auto& [key, value] : decoded.items()) {
    if (!first) out.push_back('\n');
    first = false;
    const bool is_string = value.is_string();
    out += "<｜DSML｜ parameter name=\"";
    out += key;
    out += is_string ? "\" string=\"true\">" : "\" string=\"false\">";
    out += is_string ? value.get_ref<const std::string&>() : PyJsonDumps(value);
    out += "</｜DSML｜ parameter>";
  }
  return out;
}

std::string RenderToolCalls(const std::vector<ChatToolCall>& calls) {
  std::string out = "\n\n";
  out += kCallsStartText;
  out.push_back('\n');
  bool first = true;
  for (const ChatToolCall& call : calls) {
    if (!first) out.push_back('\n');
    first = false;
    out += "<｜DSML｜ invoke name=\"" + call.name + "\">\n";
    out += RenderArguments(call.arguments);
    out += "\n</｜DSML｜ invoke>";
  }
  out.push_back('\n');
  out += kCallsEndText;
  return out;
}

std::string RenderUserBlocks(const std::vector<ChatUserBlock>& blocks) {
  std::string out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i > 0) out += "\n\n";
    if (blocks[i].is_tool_result) {
      out += "<tool_result>" + blocks[i].text + "</tool_result>";
    } else {
      out += blocks[i].text;
    }
  }
  return out;
}

// A turn after which the model speaks: a user turn, or a system message past index 0.
bool IsGenerationBoundary(const std::vector<ChatMessage>& messages, size_t index) {
  const ChatRole role = messages[index].role;
  return role == ChatRole::kUser || (role == ChatRole::kSystem && index > 0);
}

}  // namespace

StatusOr<std::string> EncodeChatV41(const std::vector<ChatMessage>& messages,
                                    const ChatEncodeOptions& options) {
  DI_ASSIGN_OR_RETURN(const int effort, EffortBudget(options.reasoning_effort));
  const bool thinking = options.thinking;
  // Any message with tools keeps every turn's reasoning (no dropping).
  bool drop_thinking = options.drop_thinking;
  for (const ChatMessage& m : messages) {
    if (PyTruthy(m.tools)) drop_thinking = false;
  }
  long last_user = -1;
  for (size_t i = messages.size(); i-- > 0;) {
    if (IsGenerationBoundary(messages, i)) {
      last_user = static_cast<long>(i);
      break;
    }
  }

  std::string prompt = options.bos;
  for (size_t index = 0; index < messages.size(); ++index) {
    const ChatMessage& m = messages[index];
    const bool is_last = index + 1 == messages.size();
    if (index == 0 && (thinking || m.role == ChatRole::kSystem)) prompt += kSystemText;
    if (index == 0 && thinking) {
      prompt += "Reasoning Effort: " + std::to_string(effort) +
                " (range 1-100, the higher the value, the more thorough the reasoning)\n\n";
    }
    switch (m.role) {
      case ChatRole::kSystem:
        if (index > 0) prompt += kSystemText;
        prompt += m.content;
        if (PyTruthy(m.tools)) prompt += "\n\n" + RenderTools(m.tools);
        if (PyTruthy(m.response_format)) {
          prompt += "\n\n";
          prompt += kResponseFormatHead;
          prompt += PyJsonDumps(m.response_format);
        }
        break;
      case ChatRole::kUser:
        prompt += kUserText;
        prompt += RenderUserBlocks(m.blocks);
        break;
      case ChatRole::kLatestReminder:
        prompt += kLatestReminderText;
        prompt += m.content;
        break;
      case ChatRole::kAssistant: {
        // A turn answering a task turn never carries reasoning.
        const bool after_task = index > 0 && messages[index - 1].task.has_value();
        if (thinking && !after_task && (!drop_thinking || static_cast<long>(index) > last_user)) {
          prompt += m.reasoning_content;
          prompt += kThinkEndText;
        }
        prompt += m.content;
        if (!m.tool_calls.empty()) prompt += RenderToolCalls(m.tool_calls);
        if (!m.wo_eos) prompt += kEosText;
        break;
      }
    }

    if (is_last && !options.add_generation_prompt) break;
    // The header goes only where the model speaks next: before an assistant or latest_reminder
    // message, or at the end of the conversation.
    if (!is_last && messages[index + 1].role != ChatRole::kAssistant &&
        messages[index + 1].role != ChatRole::kLatestReminder) {
      continue;
    }
    if (m.task.has_value()) {
      DI_ASSIGN_OR_RETURN(std::string_view token, TaskToken(*m.task));
      if (*m.task == "action") {
        prompt += kAssistantText;
        prompt += thinking ? kThinkStartText : kThinkEndText;
      }
      prompt += token;
    } else if (IsGenerationBoundary(messages, index)) {
      prompt += kAssistantText;
      const bool open_thinking =
          thinking && (!drop_thinking || static_cast<long>(index) >= last_user);
      prompt += open_thinking ? kThinkStartText : kThinkEndText;
    }
  }
  return prompt;
}

StatusOr<std::string> RenderChatRecord(const nlohmann::ordered_json& record, std::string_view bos) {
  if (!record.is_object()) return InvalidArgument("record must be a JSON object");
  auto messages = record.find("messages");
  if (messages == record.end()) return InvalidArgument("record has no \"messages\"");
  Json tools;
  if (auto t = record.find("tools"); t != record.end()) tools = *t;
  DI_ASSIGN_OR_RETURN(std::vector<ChatMessage> prepared, PrepareChatMessages(*messages, tools));

  ChatEncodeOptions options;
  options.bos = std::string(bos);
  if (auto o = record.find("options"); o != record.end() && !o->is_null()) {
    if (!o->is_object()) return InvalidArgument("\"options\" must be an object");
    auto flag = [&o](const char* key, bool fallback) -> StatusOr<bool> {
      auto it = o->find(key);
      if (it == o->end() || it->is_null()) return fallback;
      if (!it->is_boolean()) {
        return InvalidArgument(std::string("options.") + key + " must be true or false");
      }
      return it->get<bool>();
    };
    DI_ASSIGN_OR_RETURN(options.thinking, flag("thinking", false));
    DI_ASSIGN_OR_RETURN(options.drop_thinking, flag("drop_thinking", true));
    DI_ASSIGN_OR_RETURN(options.add_generation_prompt, flag("add_generation_prompt", true));
    if (auto e = o->find("reasoning_effort"); e != o->end()) options.reasoning_effort = *e;
  }
  return EncodeChatV41(prepared, options);
}

}  // namespace deepinfer::tokenizer
