// Incremental V4.1 output parsing: generated text fed piece by piece (a token's text at a time)
// becomes reasoning / content / tool-call deltas.
//
// Contract:
//   - Only text that is certain to end up where it is emitted is emitted: a suffix that could be
//     the start of a marker (</think>, EOS, "\n\n<｜DSML｜ calls", <think>, BOS, a DSML tag) or
//     of a UTF-8 character is held back, so no partial tag ever leaks.
//   - Tool calls are emitted when their DSML block has been closed and parsed; the block's text
//     itself is never emitted as content.
//   - Finish() runs the one-shot parser (output_parser.h) on the whole text. When it accepts,
//     the concatenation of every delta (Feeds and Finish) equals its result exactly, however the
//     text was split. When it rejects, Finish reports the same error and flushes what was held
//     back leniently: malformed DSML and unterminated text become content (unclosed reasoning
//     stays reasoning); nothing is ever retracted.
// Memory: keeps the whole generation (the one-shot check at the end needs it). Time: linear in
// the text, plus one re-parse of a DSML block per "</｜DSML｜ calls>" seen inside it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat/output_parser.h"

namespace deepinfer::tokenizer {

struct ParseDelta {
  std::string reasoning_content;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;

  bool empty() const { return reasoning_content.empty() && content.empty() && tool_calls.empty(); }
};

class OutputStreamParser {
 public:
  explicit OutputStreamParser(bool thinking);

  ParseDelta Feed(std::string_view piece);
  // End of the generation: the rest, and in *status the one-shot verdict on the whole text.
  // cut_short: the generation stopped at max_tokens (or the context). Then a tool-call block it
  // ends in becomes the (partial) calls it holds (SalvageDsmlCalls), not text: the DSML markup
  // never reaches the client.
  ParseDelta Finish(Status* status, bool cut_short = false);

  const std::string& text() const { return text_; }

 private:
  enum class Phase { kReasoning, kContent, kCalls, kAfterCalls, kDone, kBroken };

  // End of the part of text_[from, size) that can be emitted now (see the hold-back rule).
  size_t SafeEnd(size_t from) const;
  // Emits text_[emitted_, end) on one channel (`all` accumulates that channel's emitted text).
  void Emit(size_t end, std::string* all, std::string* delta);

  bool thinking_;
  Phase phase_;
  std::string text_;
  size_t emitted_ = 0;     // text_[0, emitted_) is decided (emitted or consumed as markup)
  size_t calls_open_ = 0;  // kCalls: where "\n\n<｜DSML｜ calls" starts
  size_t scan_ = 0;        // kCalls: where to look for the next "</｜DSML｜ calls>"
  // Everything emitted so far, to check against the one-shot result in Finish.
  std::string reasoning_;
  std::string content_;
  std::vector<ParsedToolCall> calls_;
  bool finished_ = false;
};

}  // namespace deepinfer::tokenizer
