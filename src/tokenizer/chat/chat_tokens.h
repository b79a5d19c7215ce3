// The special strings of the DeepSeek-V4.1 chat format (checkpoint `encoding/encoding.py`).
//
// Every one of them is a single token of the V4.1 vocabulary; the renderer and the output parser
// work on text, so they only need the spellings. The full-width bar `｜` (U+FF5C) and `▁` (U+2581)
// are load-bearing, and so is the leading space of the DSML tag names (" calls", " invoke",
// " parameter": V4 spelled them without it).
#pragma once

#include <string_view>

namespace deepinfer::tokenizer {

inline constexpr std::string_view kBosText = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEosText = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kSystemText = "<｜System｜>";
inline constexpr std::string_view kUserText = "<｜User｜>";
inline constexpr std::string_view kAssistantText = "<｜Assistant｜>";
inline constexpr std::string_view kLatestReminderText = "<｜latest_reminder｜>";
inline constexpr std::string_view kThinkStartText = "<think>";
inline constexpr std::string_view kThinkEndText = "</think>";
inline constexpr std::string_view kDsmlText = "｜DSML｜";

// DSML markers as the renderer writes them and the parser reads them.
inline constexpr std::string_view kCallsStartText = "<｜DSML｜ calls>";
inline constexpr std::string_view kCallsEndText = "</｜DSML｜ calls>";
// What separates content from a calls block in generated text ("\n\n" is not content).
inline constexpr std::string_view kCallsOpenerText = "\n\n<｜DSML｜ calls";
inline constexpr std::string_view kInvokeOpenText = "<｜DSML｜ invoke";
inline constexpr std::string_view kInvokeCloseText = "</｜DSML｜ invoke";
inline constexpr std::string_view kParameterOpenText = "<｜DSML｜ parameter";
// The parser's parameter terminator: the '<' before it belongs to the parameter body.
inline constexpr std::string_view kParameterCloseText = "/｜DSML｜ parameter";

}  // namespace deepinfer::tokenizer
