// OpenAI-style chat requests → the message list the V4.1 encoder renders.
//
// PrepareChatMessages applies the input preparation that the V4.1 serving wrappers (vLLM, and
// DeepSeek's own harness) do before `encode_messages`, in this order:
//   1. a `content` list of {"type":"text","text":…} parts is joined with "\n\n";
//   2. request-level `tools` go onto messages[0] when it is a system message, else onto a new
//      {"role":"system","content":""} inserted at index 0;
//   3. `tool` messages become <tool_result> blocks of a user turn. As in the reference
//      `merge_tool_messages`, a tool result or user message that follows a user turn (one that is
//      not a task turn) is merged into it: consecutive tool results, the user text after them,
//      and also two plain consecutive user messages end up in one turn joined by "\n\n";
//   4. within a turn, tool results are stably reordered to follow the `tool_calls` order of the
//      most recent assistant message that made calls (ids it does not know sort as position 0).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::tokenizer {

enum class ChatRole { kSystem, kUser, kAssistant, kLatestReminder };

// The JSON member's constructors can throw only std::bad_alloc.
struct ChatToolCall {  // NOLINT(bugprone-exception-escape)
  std::string id;
  std::string name;
  // As given: an object, or a JSON string the encoder decodes (twice if double-encoded).
  nlohmann::ordered_json arguments;
};

// One block of a user turn: plain text, or a tool result (rendered
// <tool_result>text</tool_result>).
struct ChatUserBlock {
  bool is_tool_result = false;
  std::string tool_call_id;  // tool results only
  std::string text;
};

struct ChatMessage {  // NOLINT(bugprone-exception-escape): as ChatToolCall
  ChatRole role = ChatRole::kUser;
  std::string content;                   // system, assistant, latest_reminder
  std::vector<ChatUserBlock> blocks;     // user turns
  std::string reasoning_content;         // assistant
  std::vector<ChatToolCall> tool_calls;  // assistant
  // Function definitions (the "function" objects of OpenAI tools); rendered on system messages,
  // and on any message they switch off reasoning dropping. Null when absent.
  nlohmann::ordered_json tools;
  nlohmann::ordered_json response_format;  // system messages; null when absent
  bool wo_eos = false;                     // assistant: no EOS after the turn (prefill)
  std::optional<std::string> task;         // "action", "query", … (user turns)
};

// `messages` (array) and `tools` (array, or null when the request has none) as in an OpenAI chat
// request plus the encoder-level keys (tools / response_format on a system message, wo_eos,
// task). Errors name the message index and the key.
StatusOr<std::vector<ChatMessage>> PrepareChatMessages(const nlohmann::ordered_json& messages,
                                                       const nlohmann::ordered_json& tools);

}  // namespace deepinfer::tokenizer
