// The DSML tool-call block of V4.1 generated text, read exactly as the reference parser reads it.
//
// The reference (DeepSeek's V4 `parse_tool_calls` with the V4.1 tag spellings) scans with
// "read until the first of these stop strings" steps and checks each gap:
//   ">\n" <｜DSML｜ invoke NAME-PART (<｜DSML｜ parameter PARAM-PART /｜DSML｜ parameter ">\n")*
//   </｜DSML｜ invoke ">\n" … </｜DSML｜ calls>
// NAME-PART must match ^\s*name="(.*?)">\n$ and PARAM-PART ^ name="(.*?)" string="(true|false)">
// (.*?)<$ (Python re, DOTALL; `$` also matches before a final "\n", so `name="f">\n\n` — an invoke
// without parameters — is accepted). Quirks kept on purpose: text that simply ends inside the block
// at a step boundary (no closing tag, no EOS) is accepted with the calls read so far.
//
// Every stop set used here is self-synchronising (no stop string can start inside another one),
// so a step whose stop string is already present in a prefix of the text gives the same answer
// on any longer text. That is what lets the streaming parser run this on a prefix (`final` =
// false) and trust a complete or failed answer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::tokenizer {

struct ParsedToolCall {
  std::string name;
  // Rebuilt like the reference: {"k": v, …} with string parameters JSON-quoted (Python
  // json.dumps, non-ASCII raw) and string="false" values pasted verbatim (not validated).
  std::string arguments;

  bool operator==(const ParsedToolCall&) const = default;
};

struct DsmlCallsResult {
  enum class Outcome { kComplete, kNeedMore, kError };
  Outcome outcome = Outcome::kNeedMore;
  size_t end = 0;       // kComplete: index just past the block (or text end)
  bool closed = false;  // kComplete: ended by </｜DSML｜ calls> (not by running out)
  std::vector<ParsedToolCall> calls;
  std::string error;  // kError
};

// Parses the block that starts at `begin` (just past "\n\n<｜DSML｜ calls"). With `final` false
// the text may still grow: whenever the answer could depend on text not yet seen, kNeedMore.
DsmlCallsResult ParseDsmlCalls(std::string_view text, size_t begin, bool final);

// A block cut short (the generation hit max_tokens inside it), read as far as it goes: every
// complete invoke, then the one the text ends in once its name is complete, with its arguments
// as far as they were written ("{", each complete parameter, then the cut one: a string value
// JSON-quoted without its closing quote, a raw value as written), not closed. OpenAI returns a
// tool call cut by max_tokens the same way: the partial arguments, finish_reason "length". Stops
// at the first malformed piece, returning what came before it.
std::vector<ParsedToolCall> SalvageDsmlCalls(std::string_view text, size_t begin);

// The last text of a generation cut by max_tokens without the U+FFFD the detokenizer writes for
// a character whose bytes were cut off: the chat routes feed this to OutputStreamParser, then
// Finish(status, cut_short = true), so neither a split character nor a split DSML marker reaches
// the client.
std::string_view TrimCutCharacter(std::string_view text);

}  // namespace deepinfer::tokenizer
