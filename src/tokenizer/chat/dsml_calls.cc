#include "tokenizer/chat/dsml_calls.h"

#include <initializer_list>
#include <optional>

#include "tokenizer/chat/chat_tokens.h"
#include "tokenizer/chat/python_json.h"

namespace deepinfer::tokenizer {
namespace {

struct StopHit {
  size_t pos;
  std::string_view stop;
};

// Earliest occurrence at or after `from` of any of `stops`.
std::optional<StopHit> FindFirstStop(std::string_view text, size_t from,
                                     std::initializer_list<std::string_view> stops) {
  std::optional<StopHit> best;
  for (std::string_view stop : stops) {
    const size_t pos = text.find(stop, from);
    if (pos != std::string_view::npos && (!best || pos < best->pos)) best = StopHit{pos, stop};
  }
  return best;
}

// Length of the code point starting at s[i] that Python's re `\s` matches, or 0.
size_t PyWhitespaceLength(std::string_view s, size_t i) {
  const auto b = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) return 1;
  if (c == 0xC2 && i + 1 < s.size() && (b(i + 1) == 0x85 || b(i + 1) == 0xA0)) return 2;
  if (i + 2 >= s.size()) return 0;
  const uint32_t cp = (c == 0xE1 || c == 0xE2 || c == 0xE3)
                          ? ((c & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu)
                          : 0;
  const bool match = cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return match && (b(i + 1) & 0xC0) == 0x80 && (b(i + 2) & 0xC0) == 0x80 ? 3 : 0;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// ^\s*name="(.*?)">\n$ → the name.
std::optional<std::string_view> MatchInvokeName(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = PyWhitespaceLength(s, i);
    if (n == 0) break;
    i += n;
  }
  constexpr std::string_view kOpen = "name=\"";
  if (s.substr(i, kOpen.size()) != kOpen) return std::nullopt;
  std::string_view rest = s.substr(i + kOpen.size());
  if (EndsWith(rest, "\">\n\n")) return rest.substr(0, rest.size() - 4);
  if (EndsWith(rest, "\">\n")) return rest.substr(0, rest.size() - 3);
  return std::nullopt;
}

struct ParamMatch {
  std::string_view name;
  bool is_string;
  std::string_view value;
};

// ^ name="(.*?)" string="(true|false)">(.*?)<$ → name, flag, value.
std::optional<ParamMatch> MatchParameter(std::string_view s) {
  constexpr std::string_view kOpen = " name=\"";
  constexpr std::string_view kTrue = "\" string=\"true\">";
  constexpr std::string_view kFalse = "\" string=\"false\">";
  if (s.substr(0, kOpen.size()) != kOpen) return std::nullopt;
  // The lazy name ends at the first separator; a later one could only shorten the value's tail,
  // which is fixed by the end of `s`, so the first is the only candidate.
  const auto hit = FindFirstStop(s, kOpen.size(), {kTrue, kFalse});
  if (!hit) return std::nullopt;
  std::string_view rest = s.substr(hit->pos + hit->stop.size());
  ParamMatch m{s.substr(kOpen.size(), hit->pos - kOpen.size()), hit->stop == kTrue, {}};
  if (EndsWith(rest, "<")) {
    m.value = rest.substr(0, rest.size() - 1);
  } else if (EndsWith(rest, "<\n")) {
    m.value = rest.substr(0, rest.size() - 2);
  } else {
    return std::nullopt;
  }
  return m;
}

// Appends `"name": value` (after ", " unless it is the first) to a call's arguments as the
// reference rebuilds them: a string value JSON-quoted, any other pasted verbatim. `cut`: the
// value was cut short, so a string value gets no closing quote.
void AppendArgument(std::string_view name, bool is_string, std::string_view value, bool first,
                    bool cut, std::string* arguments) {
  if (!first) *arguments += ", ";
  AppendPyJsonQuoted(name, arguments);
  *arguments += ": ";
  if (!is_string) {
    *arguments += value;
    return;
  }
  AppendPyJsonQuoted(value, arguments);
  if (cut) arguments->pop_back();
}

DsmlCallsResult Fail(std::string message) {
  DsmlCallsResult r;
  r.outcome = DsmlCallsResult::Outcome::kError;
  r.error = std::move(message);
  return r;
}

DsmlCallsResult NeedMore() { return DsmlCallsResult{}; }

// `gap` (text the cut ended) without what the cut split: trailing U+FFFD (the detokenizer's
// stand-in for a character whose bytes were cut off), then a trailing proper prefix of any of
// `stops` (a marker is markup, not text).
std::string_view DropCutMarker(std::string_view gap,
                               std::initializer_list<std::string_view> stops) {
  gap = TrimCutCharacter(gap);
  size_t cut = 0;
  for (std::string_view stop : stops) {
    for (size_t n = std::min(gap.size(), stop.size() - 1); n > cut; --n) {
      if (gap.substr(gap.size() - n) == stop.substr(0, n)) {
        cut = n;
        break;
      }
    }
  }
  return gap.substr(0, gap.size() - cut);
}

}  // namespace

DsmlCallsResult ParseDsmlCalls(std::string_view text, size_t begin, bool final) {
  DsmlCallsResult result;
  size_t index = begin;
  // One read step: the gap up to the first stop; at the end of a final text the gap is the rest.
  struct Step {
    std::string_view gap;
    std::string_view stop;  // empty: ran to the end of the text
  };
  auto read = [&](std::initializer_list<std::string_view> stops) -> std::optional<Step> {
    const auto hit = FindFirstStop(text, index, stops);
    if (!hit) {
      if (!final) return std::nullopt;
      Step step{text.substr(index), {}};
      index = text.size();
      return step;
    }
    Step step{text.substr(index, hit->pos - index), hit->stop};
    index = hit->pos + hit->stop.size();
    return step;
  };

  while (index < text.size()) {
    auto head = read({kInvokeOpenText, kCallsEndText});
    if (!head) return NeedMore();
    if (head->gap != ">\n") {
      return Fail("Tool call format error: expected '>\\n' but got '" + std::string(head->gap) +
                  "'");
    }
    if (head->stop == kCallsEndText) {
      result.outcome = DsmlCallsResult::Outcome::kComplete;
      result.end = index;
      result.closed = true;
      return result;
    }
    if (head->stop.empty()) return Fail("Missing special token in tool calls");

    auto name_step = read({kParameterOpenText, kInvokeCloseText});
    if (!name_step) return NeedMore();
    const auto name = MatchInvokeName(name_step->gap);
    if (!name) return Fail("Tool name format error: '" + std::string(name_step->gap) + "'");

    ParsedToolCall call;
    call.name = std::string(*name);
    std::vector<std::string_view> seen;
    std::string_view stop = name_step->stop;
    call.arguments = "{";
    while (stop == kParameterOpenText) {
      auto param_step = read({kParameterCloseText});
      if (!param_step) return NeedMore();
      const auto param = MatchParameter(param_step->gap);
      if (!param) return Fail("Parameter format error: '" + std::string(param_step->gap) + "'");
      for (std::string_view s : seen) {
        if (s == param->name) {
          return Fail("Duplicate parameter name: '" + std::string(param->name) + "'");
        }
      }
      seen.push_back(param->name);
      AppendArgument(param->name, param->is_string, param->value, seen.size() == 1,
                     /*cut=*/false, &call.arguments);
      auto tail = read({kParameterOpenText, kInvokeCloseText});
      if (!tail) return NeedMore();
      if (tail->gap != ">\n") {
        return Fail("Parameter format error: expected '>\\n' but got '" + std::string(tail->gap) +
                    "'");
      }
      stop = tail->stop;
    }
    call.arguments += "}";
    result.calls.push_back(std::move(call));
  }
  if (!final) return NeedMore();
  result.outcome = DsmlCallsResult::Outcome::kComplete;
  result.end = index;
  return result;
}

std::vector<ParsedToolCall> SalvageDsmlCalls(std::string_view text, size_t begin) {
  std::vector<ParsedToolCall> calls;
  size_t index = begin;
  // The gap up to the first of `stops`, or nullopt when the text ends first (*cut = the rest).
  auto read = [&](std::initializer_list<std::string_view> stops,
                  std::string_view* cut) -> std::optional<StopHit> {
    const auto hit = FindFirstStop(text, index, stops);
    if (!hit) {
      *cut = text.substr(index);
      index = text.size();
      return std::nullopt;
    }
    *cut = text.substr(index, hit->pos - index);
    index = hit->pos + hit->stop.size();
    return hit;
  };
  std::string_view gap;
  while (index < text.size()) {
    const auto head = read({kInvokeOpenText, kCallsEndText}, &gap);
    if (!head || head->stop == kCallsEndText || gap != ">\n") break;
    const auto name_hit = read({kParameterOpenText, kInvokeCloseText}, &gap);
    if (!name_hit) gap = DropCutMarker(gap, {kParameterOpenText, kInvokeCloseText});
    std::optional<std::string_view> name = MatchInvokeName(gap);
    const std::string with_newline = std::string(gap) + "\n";  // cut just before the \n
    if (!name && !name_hit) name = MatchInvokeName(with_newline);
    if (!name) break;
    ParsedToolCall call;
    call.name = std::string(*name);
    call.arguments = "{";
    std::optional<StopHit> stop = name_hit;
    bool first = true;
    bool closed = stop.has_value();
    while (stop && stop->stop == kParameterOpenText) {
      const auto param_hit = read({kParameterCloseText}, &gap);
      if (!param_hit) {
        // The cut parameter: its value as far as it goes, once its name and kind are complete
        // (a split closing tag, and the "<" that opens it, are not part of the value).
        std::string_view s = DropCutMarker(gap, {kParameterCloseText});
        if (!s.empty() && s.back() == '<') s.remove_suffix(1);
        constexpr std::string_view kOpen = " name=\"";
        const auto sep =
            FindFirstStop(s, kOpen.size(), {"\" string=\"true\">", "\" string=\"false\">"});
        if (s.substr(0, kOpen.size()) == kOpen && sep) {
          AppendArgument(s.substr(kOpen.size(), sep->pos - kOpen.size()),
                         sep->stop == "\" string=\"true\">", s.substr(sep->pos + sep->stop.size()),
                         first, /*cut=*/true, &call.arguments);
        }
        closed = false;
        break;
      }
      const auto param = MatchParameter(gap);
      if (!param) {
        closed = false;
        break;
      }
      AppendArgument(param->name, param->is_string, param->value, first, /*cut=*/false,
                     &call.arguments);
      first = false;
      stop = read({kParameterOpenText, kInvokeCloseText}, &gap);
      closed = stop.has_value() && gap == ">\n";
      if (stop && gap != ">\n") break;
    }
    if (closed) call.arguments += "}";
    calls.push_back(std::move(call));
    if (!closed) break;
  }
  return calls;
}

std::string_view TrimCutCharacter(std::string_view text) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  while (EndsWith(text, kReplacement)) text.remove_suffix(kReplacement.size());
  return text;
}

}  // namespace deepinfer::tokenizer
