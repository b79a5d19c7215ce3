#include "tokenizer/chat/output_stream_parser.h"

#include <algorithm>
#include <initializer_list>

#include "core/check.h"
#include "tokenizer/chat/chat_tokens.h"

namespace deepinfer::tokenizer {
namespace {

// Strings that are never emitted in pieces: held back while the text ends with a proper prefix.
constexpr std::string_view kHeldMarkers[] = {
    kThinkEndText, kThinkStartText, kEosText, kBosText, kCallsOpenerText, "<｜DSML｜", "</｜DSML｜",
};

struct Hit {
  size_t pos = std::string_view::npos;
  std::string_view stop;
};

Hit FindFirst(std::string_view text, size_t from, std::initializer_list<std::string_view> stops) {
  Hit best;
  for (std::string_view s : stops) {
    const size_t pos = text.find(s, from);
    if (pos < best.pos) best = Hit{pos, s};
  }
  return best;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

OutputStreamParser::OutputStreamParser(bool thinking)
    : thinking_(thinking), phase_(thinking ? Phase::kReasoning : Phase::kContent) {}

size_t OutputStreamParser::SafeEnd(size_t from) const {
  const std::string_view tail = std::string_view(text_).substr(from);
  size_t held = 0;
  for (std::string_view marker : kHeldMarkers) {
    for (size_t n = std::min(marker.size() - 1, tail.size()); n > held; --n) {
      if (tail.substr(tail.size() - n) == marker.substr(0, n)) {
        held = n;
        break;
      }
    }
  }
  size_t end = text_.size() - held;
  // Do not cut a UTF-8 character: step back over up to 3 continuation bytes to the lead byte,
  // and hold the character back if it is not complete yet.
  size_t lead = end;
  while (lead > from && end - lead < 3 &&
         (static_cast<unsigned char>(text_[lead - 1]) & 0xC0) == 0x80) {
    --lead;
  }
  if (lead > from) {
    const auto c = static_cast<unsigned char>(text_[lead - 1]);
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (end - (lead - 1) < need) end = lead - 1;
  }
  return end;
}

void OutputStreamParser::Emit(size_t end, std::string* all, std::string* delta) {
  CHECK(end >= emitted_ && end <= text_.size()) << end << " " << emitted_;
  delta->append(text_, emitted_, end - emitted_);
  all->append(text_, emitted_, end - emitted_);
  emitted_ = end;
}

ParseDelta OutputStreamParser::Feed(std::string_view piece) {
  CHECK(!finished_) << "OutputStreamParser::Feed after Finish";
  text_.append(piece);
  ParseDelta delta;
  for (;;) {
    switch (phase_) {
      case Phase::kReasoning: {
        const Hit hit = FindFirst(text_, emitted_, {kThinkEndText, kCallsOpenerText, kEosText});
        if (hit.pos == std::string_view::npos) {
          Emit(SafeEnd(emitted_), &reasoning_, &delta.reasoning_content);
          return delta;
        }
        Emit(hit.pos, &reasoning_, &delta.reasoning_content);
        if (hit.stop != kThinkEndText) {  // the one-shot parser rejects this text
          phase_ = Phase::kBroken;
          return delta;
        }
        emitted_ += hit.stop.size();
        phase_ = Phase::kContent;
        continue;
      }
      case Phase::kContent: {
        const Hit hit = FindFirst(text_, emitted_, {kEosText, kCallsOpenerText});
        if (hit.pos == std::string_view::npos) {
          Emit(SafeEnd(emitted_), &content_, &delta.content);
          return delta;
        }
        Emit(hit.pos, &content_, &delta.content);
        emitted_ += hit.stop.size();
        if (hit.stop == kEosText) {
          phase_ = Phase::kDone;
          return delta;
        }
        calls_open_ = hit.pos;
        scan_ = emitted_;
        phase_ = Phase::kCalls;
        continue;
      }
      case Phase::kCalls: {
        for (;;) {
          const size_t close = text_.find(kCallsEndText, scan_);
          if (close == std::string::npos) {
            scan_ =
                std::max(scan_, text_.size() - std::min(text_.size(), kCallsEndText.size() - 1));
            return delta;
          }
          scan_ = close + 1;
          DsmlCallsResult block = ParseDsmlCalls(text_, emitted_, /*final=*/false);
          if (block.outcome == DsmlCallsResult::Outcome::kNeedMore) continue;
          if (block.outcome == DsmlCallsResult::Outcome::kError) {
            emitted_ = calls_open_;  // the malformed block is what Finish flushes as content
            phase_ = Phase::kBroken;
            return delta;
          }
          for (ParsedToolCall& call : block.calls) {
            calls_.push_back(call);
            delta.tool_calls.push_back(std::move(call));
          }
          emitted_ = block.end;
          phase_ = Phase::kAfterCalls;
          return delta;
        }
      }
      case Phase::kAfterCalls:
      case Phase::kDone:
      case Phase::kBroken:
        return delta;
    }
  }
}

ParseDelta OutputStreamParser::Finish(Status* status, bool cut_short) {
  CHECK(!finished_) << "OutputStreamParser::Finish called twice";
  finished_ = true;
  ParseDelta delta;
  StatusOr<ParsedCompletion> parsed = ParseCompletionV41(text_, thinking_);
  *status = parsed.status();
  if (cut_short && phase_ == Phase::kCalls) {
    // Cut inside the block: even where the reference accepts the text (it ends at a step
    // boundary), the last call was cut, so it goes out as the partial call it is.
    std::vector<ParsedToolCall> calls =
        SalvageDsmlCalls(text_, calls_open_ + kCallsOpenerText.size());
    if (calls.size() > calls_.size()) {
      delta.tool_calls.assign(calls.begin() + static_cast<long>(calls_.size()), calls.end());
    }
    return delta;
  }
  if (parsed.ok()) {
    // Everything emitted must be a prefix of the one-shot result (the streaming contract).
    const ParsedCompletion& p = *parsed;
    CHECK(StartsWith(p.reasoning_content, reasoning_)) << "reasoning diverged from one-shot parse";
    CHECK(StartsWith(p.content, content_)) << "content diverged from one-shot parse";
    CHECK(calls_.size() <= p.tool_calls.size() &&
          std::equal(calls_.begin(), calls_.end(), p.tool_calls.begin()))
        << "tool calls diverged from one-shot parse";
    delta.reasoning_content = p.reasoning_content.substr(reasoning_.size());
    delta.content = p.content.substr(content_.size());
    delta.tool_calls.assign(p.tool_calls.begin() + static_cast<long>(calls_.size()),
                            p.tool_calls.end());
    return delta;
  }
  // Lenient flush of what was held back; a trailing EOS is markup, not text.
  std::string_view rest;
  std::string* channel = &delta.content;
  switch (phase_) {
    case Phase::kReasoning:
      rest = std::string_view(text_).substr(emitted_);
      channel = &delta.reasoning_content;
      break;
    case Phase::kContent:
      rest = std::string_view(text_).substr(emitted_);
      // Cut while a tool-call block was opening: the held-back start of its marker goes too.
      if (cut_short && !rest.empty() && kCallsOpenerText.substr(0, rest.size()) == rest) rest = {};
      break;
    case Phase::kCalls:
      rest = std::string_view(text_).substr(calls_open_);
      break;
    case Phase::kBroken:
      rest = std::string_view(text_).substr(emitted_);
      if (StartsWith(rest, kEosText)) rest = {};
      break;
    case Phase::kAfterCalls:
    case Phase::kDone:
      break;
  }
  if (rest.size() >= kEosText.size() && rest.substr(rest.size() - kEosText.size()) == kEosText) {
    rest.remove_suffix(kEosText.size());
  }
  channel->append(rest);
  return delta;
}

}  // namespace deepinfer::tokenizer
