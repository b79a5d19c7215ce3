#include "tokenizer/chat/chat_messages.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "tokenizer/chat/python_json.h"

namespace deepinfer::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::string Where(size_t index) { return "messages[" + std::to_string(index) + "]"; }

// Text of a `content` value: a string, null/absent (""), or a list of text parts joined by "\n\n".
StatusOr<std::string> ContentText(const Json& message, size_t index) {
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return InvalidArgument(Where(index) + ".content must be a string or a list of text parts");
  }
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& part = (*it)[i];
    auto type = part.is_object() ? part.find("type") : part.end();
    auto part_text = part.is_object() ? part.find("text") : part.end();
    if (type == part.end() || *type != "text" || part_text == part.end() ||
        !part_text->is_string()) {
      return InvalidArgument(Where(index) + ".content[" + std::to_string(i) +
                             "] is not a {\"type\": \"text\", \"text\": string} part");
    }
    if (i > 0) text += "\n\n";
    text += part_text->get_ref<const std::string&>();
  }
  return text;
}

// A tool message's content as the reference renders it inside <tool_result>: a string as is,
// a list of parts joined by "\n\n" with non-text parts as "[Unsupported TYPE]", and a missing or
// null content as Python's str(None) — both public ports do exactly that.
StatusOr<std::string> ToolResultText(const Json& message, size_t index) {
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) return std::string("None");
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return InvalidArgument(Where(index) + ".content of a tool message must be a string or a list");
  }
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& part = (*it)[i];
    if (i > 0) text += "\n\n";
    auto type = part.is_object() ? part.find("type") : part.end();
    if (type != part.end() && *type == "text") {
      auto part_text = part.find("text");
      if (part_text != part.end() && !part_text->is_string()) {
        return InvalidArgument(Where(index) + ".content[" + std::to_string(i) +
                               "].text must be a string");
      }
      if (part_text != part.end()) text += part_text->get_ref<const std::string&>();
    } else if (type != part.end() && type->is_string()) {
      text += "[Unsupported " + type->get<std::string>() + "]";
    } else {
      return InvalidArgument(Where(index) + ".content[" + std::to_string(i) + "] has no type");
    }
  }
  return text;
}

StatusOr<std::string> OptionalString(const Json& message, const char* key, size_t index) {
  auto it = message.find(key);
  if (it == message.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument(Where(index) + "." + key + " must be a string");
  return it->get<std::string>();
}

// OpenAI tools [{"type":"function","function":{…}}] → the list of function objects.
StatusOr<Json> FunctionsOf(const Json& tools, const std::string& where) {
  if (tools.is_null()) return Json();
  if (!tools.is_array()) return InvalidArgument(where + " must be a list");
  Json functions = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    auto fn = tool.is_object() ? tool.find("function") : tool.end();
    if (fn == tool.end() || !fn->is_object()) {
      return InvalidArgument(where + "[" + std::to_string(i) + "] has no \"function\" object");
    }
    functions.push_back(*fn);
  }
  return functions;
}

StatusOr<std::vector<ChatToolCall>> ToolCallsOf(const Json& message, size_t index) {
  std::vector<ChatToolCall> calls;
  auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return calls;
  if (!it->is_array()) return InvalidArgument(Where(index) + ".tool_calls must be a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& call = (*it)[i];
    const std::string where = Where(index) + ".tool_calls[" + std::to_string(i) + "]";
    auto fn = call.is_object() ? call.find("function") : call.end();
    if (fn == call.end() || !fn->is_object()) return InvalidArgument(where + " has no function");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) {
      return InvalidArgument(where + ".function.name must be a string");
    }
    auto arguments = fn->find("arguments");
    if (arguments == fn->end()) return InvalidArgument(where + ".function.arguments is missing");
    ChatToolCall out;
    out.name = name->get<std::string>();
    out.arguments = *arguments;
    // The id the reorder step keys on: `id`, else `function.id`.
    auto id = call.find("id");
    if (id != call.end() && id->is_string() && !id->get_ref<const std::string&>().empty()) {
      out.id = id->get<std::string>();
    } else if (auto fid = fn->find("id"); fid != fn->end() && fid->is_string()) {
      out.id = fid->get<std::string>();
    }
    calls.push_back(std::move(out));
  }
  return calls;
}

// Stable reorder of the tool-result blocks of each user turn by the call order of the latest
// assistant message that made tool calls; text blocks keep their slots.
void SortToolResults(std::vector<ChatMessage>* messages) {
  std::unordered_map<std::string, size_t> order;
  for (ChatMessage& m : *messages) {
    if (m.role == ChatRole::kAssistant && !m.tool_calls.empty()) {
      order.clear();
      for (size_t i = 0; i < m.tool_calls.size(); ++i) {
        if (!m.tool_calls[i].id.empty()) order[m.tool_calls[i].id] = i;
      }
    } else if (m.role == ChatRole::kUser && !order.empty()) {
      std::vector<ChatUserBlock> results;
      for (const ChatUserBlock& b : m.blocks) {
        if (b.is_tool_result) results.push_back(b);
      }
      if (results.size() < 2) continue;
      auto key = [&order](const ChatUserBlock& b) {
        auto it = order.find(b.tool_call_id);
        return it == order.end() ? size_t{0} : it->second;
      };
      std::stable_sort(
          results.begin(), results.end(),
          [&key](const ChatUserBlock& a, const ChatUserBlock& b) { return key(a) < key(b); });
      size_t next = 0;
      for (ChatUserBlock& b : m.blocks) {
        if (b.is_tool_result) b = results[next++];
      }
    }
  }
}

}  // namespace

StatusOr<std::vector<ChatMessage>> PrepareChatMessages(const Json& messages, const Json& tools) {
  if (!messages.is_array()) return InvalidArgument("messages must be a list");
  DI_ASSIGN_OR_RETURN(Json functions, FunctionsOf(tools, "tools"));
  const bool attach_tools = PyTruthy(functions);
  const bool first_is_system =
      !messages.empty() && messages[0].is_object() && messages[0].value("role", Json()) == "system";

  std::vector<ChatMessage> out;
  if (attach_tools && !first_is_system) {
    ChatMessage system;
    system.role = ChatRole::kSystem;
    system.tools = functions;
    out.push_back(std::move(system));
  }
  // True while out.back() is a user turn that later user text / tool results merge into.
  bool open_user_turn = false;
  for (size_t index = 0; index < messages.size(); ++index) {
    const Json& message = messages[index];
    if (!message.is_object()) return InvalidArgument(Where(index) + " must be an object");
    auto role_it = message.find("role");
    if (role_it == message.end() || !role_it->is_string()) {
      return InvalidArgument(Where(index) + ".role must be a string");
    }
    const std::string& role = role_it->get_ref<const std::string&>();

    ChatMessage m;
    if (auto task = message.find("task"); task != message.end() && !task->is_null()) {
      if (!task->is_string()) return InvalidArgument(Where(index) + ".task must be a string");
      m.task = task->get<std::string>();
    }
    if (auto wo_eos = message.find("wo_eos"); wo_eos != message.end()) {
      m.wo_eos = PyTruthy(*wo_eos);
    }
    if (auto rf = message.find("response_format"); rf != message.end()) m.response_format = *rf;
    if (auto t = message.find("tools"); t != message.end() && !t->is_null()) {
      DI_ASSIGN_OR_RETURN(m.tools, FunctionsOf(*t, Where(index) + ".tools"));
    }
    if (index == 0 && attach_tools && first_is_system) m.tools = functions;

    if (role == "tool") {
      ChatUserBlock block;
      block.is_tool_result = true;
      DI_ASSIGN_OR_RETURN(block.tool_call_id, OptionalString(message, "tool_call_id", index));
      DI_ASSIGN_OR_RETURN(block.text, ToolResultText(message, index));
      if (open_user_turn) {
        out.back().blocks.push_back(std::move(block));
      } else {
        ChatMessage user;
        user.role = ChatRole::kUser;
        user.blocks.push_back(std::move(block));
        out.push_back(std::move(user));
        open_user_turn = true;
      }
      continue;
    }
    if (role == "user") {
      ChatUserBlock block;
      DI_ASSIGN_OR_RETURN(block.text, ContentText(message, index));
      if (open_user_turn && !out.back().task.has_value()) {
        // The reference keeps the first turn's keys (task, tools, …) and drops this message's.
        out.back().blocks.push_back(std::move(block));
      } else {
        m.role = ChatRole::kUser;
        m.blocks.push_back(std::move(block));
        out.push_back(std::move(m));
        open_user_turn = true;
      }
      continue;
    }
    open_user_turn = false;
    DI_ASSIGN_OR_RETURN(m.content, ContentText(message, index));
    if (role == "system") {
      m.role = ChatRole::kSystem;
    } else if (role == "assistant") {
      m.role = ChatRole::kAssistant;
      DI_ASSIGN_OR_RETURN(m.reasoning_content, OptionalString(message, "reasoning_content", index));
      DI_ASSIGN_OR_RETURN(m.tool_calls, ToolCallsOf(message, index));
    } else if (role == "latest_reminder") {
      m.role = ChatRole::kLatestReminder;
    } else {
      return InvalidArgument(Where(index) + ".role \"" + role +
                             "\" is not one of system, user, assistant, tool, latest_reminder");
    }
    out.push_back(std::move(m));
  }
  SortToolResults(&out);
  return out;
}

}  // namespace deepinfer::tokenizer
