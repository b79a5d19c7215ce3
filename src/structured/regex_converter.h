// Regular expression -> EBNF, for `regex` requests and JSON Schema `pattern`/`format`.
//
// Supported (ECMAScript syntax, the subset JSON Schema patterns use): literals, escapes
// (\d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{H..}, escaped punctuation), `.` (any
// character but \n and \r), classes with ranges and negation, groups ( ) (?: ) (?<name> ),
// alternation, the quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same strings), and
// anchors ^ at the very start and $ at the very end (a pattern always matches the whole output).
// Anything else (backreferences, lookaround, \b, \p{..}, anchors elsewhere) is an
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
StatusOr<std::string> RegexToEbnfExpression(std::string_view pattern, bool json_string_content,
                                            const CharClass* excluded = nullptr);

}  // namespace deepinfer::structured
