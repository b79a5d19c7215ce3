// V4.1 generated text → assistant message (reasoning_content, content, tool_calls).
//
// `text` is what the model generated after the prompt: in thinking mode it starts inside the
// reasoning (the prompt ended with <think>), and a complete generation ends with
// <｜end▁of▁sentence｜>. The rules are the reference parser's (DeepSeek's V4
// `parse_message_from_completion_text` with V4.1 tag spellings), so that the same outputs are
// accepted and rejected:
//   thinking: reasoning runs to the first </think> (required);
//   content runs to EOS, or to "\n\n<｜DSML｜ calls" (those two newlines are not content), after
//   which comes a DSML block (dsml_calls.h) and then only EOS;
//   reasoning or content containing BOS, EOS, <think>, </think> or ｜DSML｜ is rejected.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat/dsml_calls.h"

namespace deepinfer::tokenizer {

struct ParsedCompletion {
  std::string reasoning_content;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;

  bool operator==(const ParsedCompletion&) const = default;
};

// One-shot parse of a whole generation; a rejection is InvalidArgument with the reference's
// message ("Invalid format: missing EOS token", …).
StatusOr<ParsedCompletion> ParseCompletionV41(std::string_view text, bool thinking);

}  // namespace deepinfer::tokenizer
