// DeepSeek-V4.1 prompt rendering: messages → the prompt text the checkpoint was trained on.
//
// Authority: the checkpoint's `encoding/encoding.py` (`encode_messages`), as transcribed by the
// vLLM and TensorRT-LLM ports; byte-identical to shared/fixtures/chat-v41/cases.jsonl. Where the
// ports disagree this follows the checkpoint: reasoning effort low=50 / high=75 / max=100
// (default high), no assistant header after a conversation that ends with an assistant turn or
// with a lone leading system message.
//
// Shape of a prompt:
//   BOS [<｜System｜> [effort line] system text ["\n\n" tools block] ["\n\n" response format]]
//   (<｜User｜> text | <｜System｜> text | <｜latest_reminder｜> text
//    | [reasoning </think>] content ["\n\n" DSML calls] <｜end▁of▁sentence｜>)…
// with <｜Assistant｜> + <think> or </think> after each user / mid-conversation system turn that is
// followed by an assistant or latest_reminder message or ends the conversation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat/chat_messages.h"
#include "tokenizer/chat/chat_tokens.h"

namespace deepinfer::tokenizer {

struct ChatEncodeOptions {
  bool thinking = false;
  // Null (default "high"), "low" / "high" / "max", or an integer 1–100. Printed only in thinking
  // mode, but validated in both (as the reference does).
  nlohmann::ordered_json reasoning_effort;
  // Drop the reasoning of assistant turns before the last user / mid-system turn. Ignored (as if
  // false) when any message defines tools.
  bool drop_thinking = true;
  // False leaves out only the assistant header after the final user / mid-system turn.
  bool add_generation_prompt = true;
  std::string bos = std::string(kBosText);
};

// Renders prepared messages (chat_messages.h). Errors: invalid reasoning effort, unknown task.
StatusOr<std::string> EncodeChatV41(const std::vector<ChatMessage>& messages,
                                    const ChatEncodeOptions& options);

// The fixture / `deepinfer render-chat` record: {"messages": […], "tools": […]?, "options":
// {"thinking", "reasoning_effort", "drop_thinking", "add_generation_prompt"}?}. Unknown keys
// (name, expected_prompt, port_notes, …) are ignored. `bos` replaces the BOS text.
StatusOr<std::string> RenderChatRecord(const nlohmann::ordered_json& record,
                                       std::string_view bos = kBosText);

}  // namespace deepinfer::tokenizer
