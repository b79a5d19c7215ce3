#include "server/chat_request.h"

#include <initializer_list>

#include "api/response_format.h"
#include "api/sampling_params_json.h"
#include "tokenizer/chat/chat_encoder.h"
#include "tokenizer/chat/chat_messages.h"
#include "tokenizer/chat/python_json.h"

namespace deepinfer::server {
namespace {

using Json = nlohmann::ordered_json;

// The body's sampling fields as the plain json that SamplingParamsFromJson reads.
nlohmann::json SamplingSubset(const Json& body, std::initializer_list<const char*> keys) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : keys) {
    auto it = body.find(key);
    if (it != body.end()) out[key] = nlohmann::json::parse(it->dump());
  }
  return out;
}

// prompt_logprobs come with the whole response (vLLM's rule): not with stream = true.
Status CheckPromptLogprobsStreaming(const Json& body, bool stream) {
  auto it = body.find("prompt_logprobs");
  if (stream && it != body.end() && !it->is_null()) {
    return InvalidArgument("prompt_logprobs is not available with stream=true");
  }
  return Status::Ok();
}

// Optional boolean field: absent or null = fallback.
StatusOr<bool> OptionalBool(const Json& body, const char* key, bool fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return InvalidArgument(std::string(key) + " must be a boolean");
  return it->get<bool>();
}

StatusOr<std::string> OptionalModel(const Json& body) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument("model must be a string");
  return it->get<std::string>();
}

StatusOr<bool> IncludeUsage(const Json& body) {
  auto it = body.find("stream_options");
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_object()) return InvalidArgument("stream_options must be an object");
  return OptionalBool(*it, "include_usage", false);
}

// reasoning_effort as the OpenAI API spells it → the V4.1 encoder's value; "none" switches
// thinking off. Returns whether thinking is on.
StatusOr<bool> ReadEffort(const Json& value, Json* effort) {
  if (value.is_null()) return false;
  if (value.is_number_integer()) {
    *effort = value;
    return true;
  }
  if (!value.is_string()) return InvalidArgument("reasoning_effort must be a string or an integer");
  const std::string s = value.get<std::string>();
  if (s == "none") return false;
  if (s == "minimal" || s == "low")
    *effort = "low";
  else if (s == "medium" || s == "high")
    *effort = "high";
  else if (s == "max" || s == "xhigh")
    *effort = "max";
  else
    return InvalidArgument("reasoning_effort must be none, minimal, low, medium, high or max");
  return true;
}

Status ReadThinking(const Json& body, ChatRequest* r) {
  if (auto it = body.find("reasoning_effort"); it != body.end()) {
    DI_ASSIGN_OR_RETURN(r->thinking, ReadEffort(*it, &r->reasoning_effort));
  }
  auto kw = body.find("chat_template_kwargs");
  if (kw == body.end() || kw->is_null()) return Status::Ok();
  if (!kw->is_object()) return InvalidArgument("chat_template_kwargs must be an object");
  if (auto it = kw->find("reasoning_effort"); it != kw->end() && !it->is_null()) {
    DI_ASSIGN_OR_RETURN(r->thinking, ReadEffort(*it, &r->reasoning_effort));
  }
  for (const char* key : {"thinking", "enable_thinking"}) {
    DI_ASSIGN_OR_RETURN(r->thinking, OptionalBool(*kw, key, r->thinking));
  }
  return Status::Ok();
}

// tool_choice: "none" drops the tools; "required" or {"type": "function", "function": {"name"}}
// set *forced (with the name for the latter).
Status ReadToolChoice(const Json& body, ChatRequest* r, bool* forced, std::string* name) {
  *forced = false;
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "auto") return Status::Ok();
    if (s == "none") {
      r->tools = Json();
      return Status::Ok();
    }
    if (s == "required") {
      *forced = true;
      return Status::Ok();
    }
    return InvalidArgument("tool_choice must be none, auto, required or a named function");
  }
  if (it->is_object()) {
    auto fn = it->find("function");
    auto type = it->find("type");
    if (type == it->end() || *type != "function" || fn == it->end() || !fn->is_object() ||
        !fn->contains("name") || !(*fn)["name"].is_string()) {
      return InvalidArgument(
          "a named tool_choice must be {\"type\": \"function\", \"function\": {\"name\": …}}");
    }
    *forced = true;
    *name = (*fn)["name"].get<std::string>();
    return Status::Ok();
  }
  return InvalidArgument("tool_choice must be a string or an object");
}

// response_format (json_object / json_schema), regex, grammar → the constraint (null: none).
StatusOr<nlohmann::json> ReadConstraint(const Json& body) {
  nlohmann::json constraint;
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string()) {
      return InvalidArgument("response_format must be an object with a string type");
    }
    const std::string type = (*it)["type"].get<std::string>();
    if (type != "text" && type != "json_object" && type != "json_schema") {
      return InvalidArgument("response_format.type must be text, json_object or json_schema");
    }
    if (type != "text") constraint["response_format"] = api::ResponseFormatField(*it);
  }
  for (const char* key : {"regex", "grammar"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) {
      if (!it->is_string()) return InvalidArgument(std::string(key) + " must be a string");
      constraint[key] = it->get<std::string>();
    }
  }
  if (constraint.size() > 1) {
    return InvalidArgument("give at most one of response_format, regex and grammar");
  }
  return constraint;
}

StatusOr<Json> ReadMessages(const Json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return InvalidArgument("messages must be a non-empty array");
  }
  Json messages = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    Json m = (*it)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return InvalidArgument(where + " must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return InvalidArgument(where + ".role must be a string");
    const std::string r = role->get<std::string>();
    if (r == "developer") {
      m["role"] = "system";
    } else if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
      return InvalidArgument(where + ".role must be system, developer, user, assistant or tool");
    }
    messages.push_back(std::move(m));
  }
  return messages;
}

StatusOr<Json> ReadTools(const Json& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return Json();
  if (!it->is_array()) return InvalidArgument("tools must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) {
      return InvalidArgument(where + " must be {\"type\": \"function\", \"function\": {…}}");
    }
    const Json& fn = t["function"];
    if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
      return InvalidArgument(where + ".function.name must be a non-empty string");
    }
  }
  return it->empty() ? Json() : *it;
}

}  // namespace

StatusOr<Json> ParseBody(std::string_view body) {
  if (tokenizer::MaxJsonNesting(body) > kMaxBodyNesting) {
    return InvalidArgument("JSON nested deeper than " + std::to_string(kMaxBodyNesting));
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("malformed JSON body");
  if (!j.is_object()) return InvalidArgument("the body must be a JSON object");
  return j;
}

engine::SamplingParams SamplingBase(const engine::SamplingParams& defaults) {
  engine::SamplingParams base = defaults;
  base.max_tokens.reset();
  return base;
}

StatusOr<ChatRequest> ParseOpenAiChat(const Json& body, const engine::SamplingParams& defaults) {
  ChatRequest r;
  DI_ASSIGN_OR_RETURN(r.model, OptionalModel(body));
  DI_ASSIGN_OR_RETURN(r.messages, ReadMessages(body));
  DI_ASSIGN_OR_RETURN(r.tools, ReadTools(body));
  bool forced = false;
  std::string forced_name;
  DI_RETURN_IF_ERROR(ReadToolChoice(body, &r, &forced, &forced_name));
  DI_ASSIGN_OR_RETURN(r.constraint, ReadConstraint(body));
  if (forced) {
    DI_ASSIGN_OR_RETURN(const bool parallel, OptionalBool(body, "parallel_tool_calls", true));
    DI_RETURN_IF_ERROR(ForceToolCall(forced_name, parallel, &r));
  }
  DI_RETURN_IF_ERROR(ReadThinking(body, &r));
  DI_ASSIGN_OR_RETURN(r.stream, OptionalBool(body, "stream", false));
  DI_ASSIGN_OR_RETURN(r.include_usage, IncludeUsage(body));
  DI_RETURN_IF_ERROR(CheckPromptLogprobsStreaming(body, r.stream));
  nlohmann::json sampling = SamplingSubset(
      body, {"max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "n", "stop",
             "stop_token_ids", "ignore_eos", "min_tokens", "presence_penalty", "frequency_penalty",
             "repetition_penalty", "logit_bias", "logprobs", "top_logprobs", "prompt_logprobs"});
  if (auto it = body.find("max_completion_tokens"); it != body.end() && !it->is_null()) {
    sampling["max_tokens"] = nlohmann::json::parse(it->dump());
  }
  if (sampling.contains("logprobs") && !sampling["logprobs"].is_null() &&
      !sampling["logprobs"].is_boolean()) {
    return InvalidArgument("logprobs must be a boolean");
  }
  DI_ASSIGN_OR_RETURN(r.params, api::SamplingParamsFromJson(sampling, SamplingBase(defaults)));
  return r;
}

StatusOr<CompletionRequest> ParseOpenAiCompletion(const Json& body,
                                                  const engine::SamplingParams& defaults) {
  CompletionRequest r;
  DI_ASSIGN_OR_RETURN(r.model, OptionalModel(body));
  DI_ASSIGN_OR_RETURN(r.stream, OptionalBool(body, "stream", false));
  DI_ASSIGN_OR_RETURN(r.include_usage, IncludeUsage(body));
  DI_ASSIGN_OR_RETURN(const bool echo, OptionalBool(body, "echo", false));
  if (echo) return Unimplemented("echo is not supported yet");
  DI_ASSIGN_OR_RETURN(r.constraint, ReadConstraint(body));
  if (auto it = body.find("suffix"); it != body.end() && !it->is_null()) {
    return Unimplemented("suffix is not supported");
  }
  auto p = body.find("prompt");
  if (p == body.end()) return InvalidArgument("prompt is required");
  Json prompt = *p;
  // A one-element batch is the same as its element; larger batches are not served yet.
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) {
    prompt = Json(prompt[0]);
  }
  if (prompt.is_string()) {
    r.prompt_text = prompt.get<std::string>();
    if (r.prompt_text.empty()) return InvalidArgument("prompt must not be empty");
  } else if (prompt.is_array() && !prompt.empty()) {
    r.prompt_is_ids = true;
    for (const auto& v : prompt) {
      if (v.is_array() || v.is_string()) {
        return Unimplemented("a batch of several prompts is not supported yet");
      }
      if (!v.is_number_integer()) return InvalidArgument("prompt token ids must be integers");
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id > INT32_MAX) return InvalidArgument("prompt token id out of range");
      r.prompt_ids.push_back(static_cast<int32_t>(id));
    }
  } else {
    return InvalidArgument("prompt must be a string or a non-empty list of token ids");
  }
  DI_RETURN_IF_ERROR(CheckPromptLogprobsStreaming(body, r.stream));
  nlohmann::json sampling = SamplingSubset(
      body, {"max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "n", "stop",
             "stop_token_ids", "ignore_eos", "min_tokens", "presence_penalty", "frequency_penalty",
             "repetition_penalty", "logit_bias", "logprobs", "prompt_logprobs"});
  if ((!sampling.contains("max_tokens") || sampling["max_tokens"].is_null()) &&
      !defaults.max_tokens) {
    sampling["max_tokens"] = 16;
  }
  if (sampling.contains("logprobs") && sampling["logprobs"].is_boolean()) {
    return InvalidArgument("logprobs must be an integer (0..20) in the completions API");
  }
  DI_ASSIGN_OR_RETURN(r.params, api::SamplingParamsFromJson(sampling, SamplingBase(defaults)));
  return r;
}

Status ForceToolCall(const std::string& name, bool parallel, ChatRequest* request) {
  if (!request->tools.is_array() || request->tools.empty()) {
    return InvalidArgument("a forced tool_choice needs tools");
  }
  if (!request->constraint.is_null() && !request->constraint.empty()) {
    return InvalidArgument(
        "a forced tool_choice cannot be combined with response_format, regex or grammar");
  }
  Json functions = Json::array();
  bool found = name.empty();
  for (const Json& t : request->tools) {
    functions.push_back(t["function"]);
    found = found || t["function"].value("name", "") == name;
  }
  if (!found) return InvalidArgument("tool_choice names '" + name + "', which is not in tools");
  // The functions travel as text so that the parameter order survives (the constraint is an
  // unordered json object).
  request->constraint = nlohmann::json::object();
  request->constraint["tool_calls"] = {
      {"functions", functions.dump()}, {"name", name}, {"parallel", parallel && name.empty()}};
  return Status::Ok();
}

StatusOr<std::string> RenderChatPrompt(const ChatRequest& request) {
  DI_ASSIGN_OR_RETURN(std::vector<tokenizer::ChatMessage> messages,
                      tokenizer::PrepareChatMessages(request.messages, request.tools));
  tokenizer::ChatEncodeOptions options;
  options.thinking = request.thinking;
  options.reasoning_effort = request.reasoning_effort;
  return tokenizer::EncodeChatV41(messages, options);
}

}  // namespace deepinfer::server
