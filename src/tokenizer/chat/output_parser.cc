#include "tokenizer/chat/output_parser.h"

#include <initializer_list>

#include "tokenizer/chat/chat_tokens.h"

namespace deepinfer::tokenizer {
namespace {

// The reference's _read_until_stop: the text from `*index` to the earliest stop (or to the end),
// moving `*index` past the stop. `*stop` is empty when none was found.
std::string_view ReadUntilStop(std::string_view text, size_t* index,
                               std::initializer_list<std::string_view> stops,
                               std::string_view* stop) {
  size_t best = std::string_view::npos;
  *stop = {};
  for (std::string_view s : stops) {
    const size_t pos = text.find(s, *index);
    if (pos != std::string_view::npos && pos < best) {
      best = pos;
      *stop = s;
    }
  }
  const size_t end = best == std::string_view::npos ? text.size() : best;
  std::string_view gap = text.substr(*index, end - *index);
  *index = best == std::string_view::npos ? text.size() : best + stop->size();
  return gap;
}

}  // namespace

StatusOr<ParsedCompletion> ParseCompletionV41(std::string_view text, bool thinking) {
  ParsedCompletion out;
  size_t index = 0;
  std::string_view stop;
  if (thinking) {
    out.reasoning_content = ReadUntilStop(text, &index, {kThinkEndText, kCallsOpenerText}, &stop);
    if (stop != kThinkEndText) return InvalidArgument("Invalid thinking format: missing </think>");
  }
  out.content = ReadUntilStop(text, &index, {kEosText, kCallsOpenerText}, &stop);
  if (stop == kCallsOpenerText) {
    DsmlCallsResult calls = ParseDsmlCalls(text, index, /*final=*/true);
    if (calls.outcome == DsmlCallsResult::Outcome::kError) return InvalidArgument(calls.error);
    out.tool_calls = std::move(calls.calls);
    index = calls.end;
    if (!ReadUntilStop(text, &index, {kEosText}, &stop).empty()) {
      return InvalidArgument("Unexpected content after tool calls");
    }
  } else if (stop != kEosText) {
    return InvalidArgument("Invalid format: missing EOS token");
  }
  if (index != text.size()) return InvalidArgument("Unexpected content at end");
  for (std::string_view token : {kBosText, kEosText, kThinkStartText, kThinkEndText, kDsmlText}) {
    if (out.content.find(token) != std::string::npos ||
        out.reasoning_content.find(token) != std::string::npos) {
      return InvalidArgument("Unexpected special token '" + std::string(token) + "' in content");
    }
  }
  return out;
}

}  // namespace deepinfer::tokenizer
