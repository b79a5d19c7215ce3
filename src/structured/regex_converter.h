// Regular expression -> EBNF, for `regex` requests and JSON Schema `pattern`/`format`.
//
// Supported (ECMAScript syntax, the subset JSON Schema patterns use): literals, escapes
// (\d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{H..}, escaped punctuation), `.` (any
// character but \n and \r), classes with ranges and negation, groups ( ) (?: ) (?<name> ),
// alternation, the quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same strings), and
// anchors ^ at the start and $ at the end of a top-level alternative. A `regex` request matches
// the whole output (anchors change nothing); a JSON Schema `pattern` is a search (search_any
// below). Anything else (backreferences, lookaround, \b, \p{..}, anchors elsewhere) is an
// InvalidArgument naming the feature.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "structured/char_class.h"

namespace deepinfer::structured {

// A complete grammar: `root ::= <pattern>`.
StatusOr<std::string> RegexToEbnf(std::string_view pattern);

// An EBNF expression for the pattern. json_string_content: the expression matches the JSON
// encoding of strings the pattern matches, as it appears between the quotes: `"` `\` and control
// characters in literals are written as JSON escapes, and classes never produce them.
// excluded (may be null): characters the expression never writes raw; classes leave them out, a
// literal one becomes a \u escape in JSON content and otherwise a branch that matches nothing.
// search_any (an EBNF expression for one character, e.g. `json_char`): search semantics, as
// ECMAScript's RegExp.test: each top-level alternative without a leading ^ may be preceded,
// and without a trailing $ followed, by any characters; empty = match the whole output.
StatusOr<std::string> RegexToEbnfExpression(std::string_view pattern, bool json_string_content,
                                            const CharClass* excluded = nullptr,
                                            const std::string& search_any = "");

}  // namespace deepinfer::structured
