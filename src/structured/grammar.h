// Grammars: the expression tree the EBNF parser builds, and the flat byte-level form the
// matcher runs.
//
// Flat form: every rule is a list of alternatives, every alternative a sequence of elements, each
// element a byte literal, a character class (matched as UTF-8, see char_class.h) or a reference to
// a rule. Groups, nested alternations and repetitions of the tree become auxiliary rules
// (`x*` -> `R ::= x R | ""`, right-recursive so that the matcher's tail-call rule keeps the stack
// flat). Every alternative ends with a kEnd sentinel element, so an element index alone names a
// position in the grammar.
//
// Build() also checks the grammar: undefined rules, left recursion (the matcher is a pushdown
// automaton, not an Earley parser) and rules that can derive no finite string are errors;
// alternatives that can never complete are dropped, so that every prefix the matcher accepts can
// be completed (no dead ends).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "structured/char_class.h"

namespace deepinfer::structured {

// The tree the EBNF parser produces.
struct Expr {
  enum class Kind { kLiteral, kClass, kRuleRef, kSequence, kChoice, kRepeat };
  static constexpr int kUnbounded = -1;

  Kind kind = Kind::kSequence;
  std::string text;  // kLiteral: UTF-8 bytes; kRuleRef: rule name
  CharClass char_class;
  std::vector<Expr> children;  // kSequence, kChoice; kRepeat: exactly one
  int min = 0, max = 0;        // kRepeat: max may be kUnbounded
  int line = 0, column = 0;    // where it started (for error messages)
};

struct RuleDef {
  std::string name;
  Expr body;
  int line = 0, column = 0;
};

class Grammar {
 public:
  enum class ElementKind : uint8_t { kLiteral, kClass, kRule, kEnd };
  struct Element {
    ElementKind kind;
    int32_t index;  // into literals(), classes() or rules(); kEnd: the rule it ends
  };
  struct Rule {
    std::string name;
    std::vector<int32_t> alternatives;  // the element index each alternative starts at
  };

  // Lowers and checks the rule definitions; `root` names the start rule.
  static StatusOr<std::shared_ptr<const Grammar>> Build(const std::vector<RuleDef>& defs,
                                                        const std::string& root);

  int32_t root() const { return root_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<std::string>& literals() const { return literals_; }
  const std::vector<CharClass>& classes() const { return classes_; }
  // Fewest bytes from element `e` (inclusive) to the end of its alternative.
  int64_t SuffixMinBytes(int32_t e) const { return suffix_min_[e]; }
  int64_t RuleMinBytes(int32_t r) const { return rule_min_[r]; }
  // Bounded repetitions x{m,n} with n > m leave the optional part as a chain of rules
  // opt_k ::= x opt_{k-1} | "" (opt_1 ::= x | ""): one chain per repetition, opt_1 first. A frame
  // in opt_k can still take k copies of x; CompiledGrammar keys its mask cache on that
  // (compiled_grammar.h, "Bounded repetitions").
  const std::vector<std::vector<int32_t>>& repeat_chains() const { return repeat_chains_; }
  // Canonical text of the flat grammar (debugging, tests).
  std::string ToString() const;

  static constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

 private:
  friend class GrammarLowering;
  Status Analyze();

  int32_t root_ = 0;
  std::vector<Rule> rules_;
  std::vector<Element> elements_;
  std::vector<std::string> literals_;
  std::vector<CharClass> classes_;
  std::vector<int64_t> rule_min_, suffix_min_;
  std::vector<std::vector<int32_t>> repeat_chains_;
};

}  // namespace deepinfer::structured
