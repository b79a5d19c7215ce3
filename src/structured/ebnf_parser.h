// The EBNF dialect (GBNF-like; docs/structured_outputs.md has the reference):
//
//   root   ::= "{" ws pair ("," ws pair)* "}"   # comments run to the end of the line
//   pair   ::= name ":" [0-9]+
//   name   ::= [a-z_] [a-z0-9_]{0,15}
//
// Rules are `name ::= expression`; a rule's body ends where the next `name ::=` starts, so
// newlines carry no meaning. Expressions: "literal" or 'literal' (escapes \n \r \t \\ \" \'
// \xHH \uHHHH \UHHHHHHHH), [character classes] with ranges and [^negation], `.` (any character),
// rule names, ( groups ), alternation |, and the postfix repetitions * + ? {m} {m,} {m,n}.
// Errors are InvalidArgument with line:column.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "structured/grammar.h"

namespace deepinfer::structured {

StatusOr<std::vector<RuleDef>> ParseEbnf(std::string_view text);

// Parses and lowers; `root` names the start rule.
StatusOr<std::shared_ptr<const Grammar>> BuildEbnfGrammar(std::string_view text,
                                                          const std::string& root = "root");

// `s` as an EBNF string literal (quoted, escaped).
std::string EbnfQuote(std::string_view s);

}  // namespace deepinfer::structured
