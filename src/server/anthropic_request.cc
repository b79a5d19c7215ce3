// Anthropic Messages request → ChatRequest (chat_request.h). The conversion to OpenAI-shaped
// messages: system (string or text blocks) → a system message; a user turn's tool_result blocks
// → tool messages (before the turn's text, as OpenAI clients order them); an assistant turn's
// thinking blocks → reasoning_content, tool_use blocks → tool_calls; tools {name, description,
// input_schema} → OpenAI functions; thinking {"type": "enabled"} → V4.1 thinking mode.
#include <string>

#include "api/sampling_params_json.h"
#include "server/chat_request.h"

namespace deepinfer::server {
namespace {

using Json = nlohmann::ordered_json;

// The text of a system prompt or tool_result content: a string or a list of text blocks.
StatusOr<std::string> BlocksText(const Json& v, const std::string& where) {
  if (v.is_null()) return std::string();
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return InvalidArgument(where + " must be a string or a list of text blocks");
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& b = v[i];
    if (!b.is_object() || b.value("type", Json()) != "text" || !b.contains("text") ||
        !b["text"].is_string()) {
      return InvalidArgument(where + "[" + std::to_string(i) + "] must be a text block");
    }
    if (i > 0) text += "\n\n";
    text += b["text"].get<std::string>();
  }
  return text;
}

StatusOr<Json> ConvertTurn(const Json& m, size_t index, Json* out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return InvalidArgument(where + " must be an object");
  auto role_it = m.find("role");
  if (role_it == m.end() || !role_it->is_string()) {
    return InvalidArgument(where + ".role must be a string");
  }
  const std::string role = role_it->get<std::string>();
  if (role != "user" && role != "assistant") {
    return InvalidArgument(where + ".role must be user or assistant");
  }
  auto content = m.find("content");
  if (content == m.end()) return InvalidArgument(where + ".content is required");
  if (content->is_string()) {
    out->push_back({{"role", role}, {"content", content->get<std::string>()}});
    return Json();
  }
  if (!content->is_array()) return InvalidArgument(where + ".content must be a string or a list");
  std::string text, reasoning;
  Json tool_calls = Json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& b = (*content)[i];
    const std::string bw = where + ".content[" + std::to_string(i) + "]";
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) {
      return InvalidArgument(bw + " must be a block with a string type");
    }
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) {
        return InvalidArgument(bw + ".text must be a string");
      }
      if (!text.empty()) text += "\n\n";
      text += b["text"].get<std::string>();
    } else if (type == "thinking" && role == "assistant") {
      if (!b.contains("thinking") || !b["thinking"].is_string()) {
        return InvalidArgument(bw + ".thinking must be a string");
      }
      reasoning += b["thinking"].get<std::string>();
    } else if (type == "redacted_thinking" && role == "assistant") {
      continue;
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("name") || !b["name"].is_string()) {
        return InvalidArgument(bw + ".name must be a string");
      }
      if (!b.contains("input") || !b["input"].is_object()) {
        return InvalidArgument(bw + ".input must be an object");
      }
      Json call = {{"id", b.value("id", Json(""))},
                   {"type", "function"},
                   {"function", {{"name", b["name"]}, {"arguments", b["input"]}}}};
      if (!call["id"].is_string()) return InvalidArgument(bw + ".id must be a string");
      tool_calls.push_back(std::move(call));
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        return InvalidArgument(bw + ".tool_use_id must be a string");
      }
      DI_ASSIGN_OR_RETURN(std::string result,
                          BlocksText(b.value("content", Json("")), bw + ".content"));
      out->push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
    } else {
      std::string message = bw;
      message += ": " + role;
      message += " content blocks of type \"" + type;
      message += "\" are not supported";
      return Unimplemented(std::move(message));
    }
  }
  if (role == "user") {
    if (!text.empty() || out->empty() || out->back().value("role", "") != "tool") {
      out->push_back({{"role", "user"}, {"content", text}});
    }
  } else {
    Json a = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) a["reasoning_content"] = reasoning;
    if (!tool_calls.empty()) a["tool_calls"] = tool_calls;
    out->push_back(std::move(a));
  }
  return Json();
}

StatusOr<Json> ConvertTools(const Json& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return Json();
  if (!it->is_array()) return InvalidArgument("tools must be an array");
  Json tools = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
      return InvalidArgument(where + ".name must be a string");
    }
    Json fn = {{"name", t["name"]}};
    if (t.contains("description")) fn["description"] = t["description"];
    if (t.contains("input_schema")) {
      if (!t["input_schema"].is_object()) {
        return InvalidArgument(where + ".input_schema must be an object");
      }
      fn["parameters"] = t["input_schema"];
    }
    tools.push_back({{"type", "function"}, {"function", fn}});
  }
  return tools.empty() ? Json() : tools;
}

}  // namespace

StatusOr<ChatRequest> ParseAnthropicMessages(const Json& body, bool count_only,
                                             const engine::SamplingParams& defaults) {
  ChatRequest r;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return InvalidArgument("model must be a string");
    r.model = it->get<std::string>();
  }
  r.messages = Json::array();
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    DI_ASSIGN_OR_RETURN(std::string system, BlocksText(*it, "system"));
    r.messages.push_back({{"role", "system"}, {"content", system}});
  }
  auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array() || messages->empty()) {
    return InvalidArgument("messages must be a non-empty array");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    DI_RETURN_IF_ERROR(ConvertTurn((*messages)[i], i, &r.messages).status());
  }
  DI_ASSIGN_OR_RETURN(r.tools, ConvertTools(body));
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    // A non-string type is the same error as an unknown one (value() would throw on it).
    const auto type_it = it->is_object() ? it->find("type") : it->end();
    const std::string type =
        type_it != it->end() && type_it->is_string() ? type_it->get<std::string>() : "";
    bool parallel = true;
    if (auto dp = it->find("disable_parallel_tool_use"); it->is_object() && dp != it->end()) {
      if (!dp->is_null() && !dp->is_boolean()) {
        return InvalidArgument("tool_choice.disable_parallel_tool_use must be a boolean");
      }
      parallel = !(dp->is_boolean() && dp->get<bool>());
    }
    if (type == "none") {
      r.tools = Json();
    } else if (type == "any") {
      DI_RETURN_IF_ERROR(ForceToolCall("", parallel, &r));
    } else if (type == "tool") {
      if (!it->contains("name") || !(*it)["name"].is_string()) {
        return InvalidArgument("tool_choice.name must be a string");
      }
      DI_RETURN_IF_ERROR(ForceToolCall((*it)["name"].get<std::string>(), parallel, &r));
    } else if (type != "auto") {
      return InvalidArgument("tool_choice.type must be auto, any, tool or none");
    }
  }
  if (auto it = body.find("thinking"); it != body.end() && !it->is_null()) {
    // A non-string type is the same error as an unknown one (value() would throw on it).
    const auto type_it = it->is_object() ? it->find("type") : it->end();
    const std::string type =
        type_it != it->end() && type_it->is_string() ? type_it->get<std::string>() : "";
    if (type == "enabled")
      r.thinking = true;
    else if (type != "disabled")
      return InvalidArgument("thinking.type must be enabled or disabled");
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidArgument("stream must be a boolean");
    r.stream = it->get<bool>();
  }
  nlohmann::json sampling = nlohmann::json::object();
  for (const char* key : {"max_tokens", "temperature", "top_p", "top_k"}) {
    if (auto it = body.find(key); it != body.end())
      sampling[key] = nlohmann::json::parse(it->dump());
  }
  if (auto it = body.find("stop_sequences"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return InvalidArgument("stop_sequences must be a list of strings");
    sampling["stop"] = nlohmann::json::parse(it->dump());
  }
  if (!count_only) {
    if (!sampling.contains("max_tokens") || !sampling["max_tokens"].is_number_integer()) {
      return InvalidArgument("max_tokens: an integer is required");
    }
  } else {
    sampling.erase("max_tokens");
  }
  if (sampling.contains("temperature") && sampling["temperature"].is_number() &&
      (sampling["temperature"].get<double>() < 0 || sampling["temperature"].get<double>() > 1)) {
    return InvalidArgument("temperature must be in [0, 1]");
  }
  DI_ASSIGN_OR_RETURN(r.params, api::SamplingParamsFromJson(sampling, SamplingBase(defaults)));
  return r;
}

}  // namespace deepinfer::server
