#include "structured/ebnf_parser.h"

#include <cctype>
#include <cstdio>

namespace deepinfer::structured {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  StatusOr<std::vector<RuleDef>> Parse() {
    std::vector<RuleDef> rules;
    SkipSpace();
    while (pos_ < s_.size()) {
      RuleDef def;
      def.line = line_, def.column = Column();
      if (!IsNameStart(s_[pos_])) return Error("expected a rule name");
      def.name = Name();
      SkipSpace();
      if (s_.substr(pos_, 3) != "::=") return Error("expected '::=' after rule name");
      Advance(3);
      DI_ASSIGN_OR_RETURN(def.body, Choice());
      SkipSpace();
      if (pos_ < s_.size() && !AtRuleStart()) return Error("unexpected character");
      rules.push_back(std::move(def));
    }
    if (rules.empty()) return InvalidArgument("1:1: empty grammar");
    return rules;
  }

 private:
  Status ErrorAt(int line, int column, const std::string& what) const {
    return InvalidArgument(std::to_string(line) + ":" + std::to_string(column) + ": " + what);
  }
  Status Error(const std::string& what) const {
    std::string near;
    if (pos_ < s_.size()) near = " near '" + std::string(s_.substr(pos_, 12)) + "'";
    return InvalidArgument(std::to_string(line_) + ":" + std::to_string(Column()) + ": " + what +
                           near);
  }
  int Column() const { return static_cast<int>(pos_ - line_start_) + 1; }
  void Advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i) {
      if (s_[pos_++] == '\n') ++line_, line_start_ = pos_;
    }
  }
  void SkipSpace() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') Advance(1);
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        Advance(1);
      } else {
        break;
      }
    }
  }
  std::string Name() {
    size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) Advance(1);
    return std::string(s_.substr(start, pos_ - start));
  }
  // `name ::=` ahead (the next rule starts)?
  bool AtRuleStart() const {
    size_t p = pos_;
    if (p >= s_.size() || !IsNameStart(s_[p])) return false;
    while (p < s_.size() && IsNameChar(s_[p])) ++p;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) ++p;
    return s_.substr(p, 3) == "::=";
  }

  StatusOr<Expr> Choice() {
    Expr choice;
    choice.kind = Expr::Kind::kChoice;
    choice.line = line_, choice.column = Column();
    while (true) {
      DI_ASSIGN_OR_RETURN(Expr seq, Sequence());
      choice.children.push_back(std::move(seq));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        Advance(1);
        continue;
      }
      break;
    }
    if (choice.children.size() == 1) return std::move(choice.children[0]);
    return choice;
  }

  StatusOr<Expr> Sequence() {
    Expr seq;
    seq.kind = Expr::Kind::kSequence;
    seq.line = line_, seq.column = Column();
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] == '|' || s_[pos_] == ')' || AtRuleStart()) break;
      DI_ASSIGN_OR_RETURN(Expr item, Item());
      seq.children.push_back(std::move(item));
    }
    return seq;
  }

  StatusOr<Expr> Item() {
    DI_ASSIGN_OR_RETURN(Expr e, Primary());
    if (pos_ >= s_.size()) return e;
    char c = s_[pos_];
    if (c != '*' && c != '+' && c != '?' && c != '{') return e;
    Expr rep;
    rep.kind = Expr::Kind::kRepeat;
    rep.line = line_, rep.column = Column();
    if (c == '*') {
      rep.min = 0, rep.max = Expr::kUnbounded;
      Advance(1);
    } else if (c == '+') {
      rep.min = 1, rep.max = Expr::kUnbounded;
      Advance(1);
    } else if (c == '?') {
      rep.min = 0, rep.max = 1;
      Advance(1);
    } else {
      Advance(1);
      DI_ASSIGN_OR_RETURN(rep.min, Number());
      rep.max = rep.min;
      if (pos_ < s_.size() && s_[pos_] == ',') {
        Advance(1);
        if (pos_ < s_.size() && s_[pos_] == '}') {
          rep.max = Expr::kUnbounded;
        } else {
          DI_ASSIGN_OR_RETURN(rep.max, Number());
        }
      }
      if (pos_ >= s_.size() || s_[pos_] != '}') return Error("expected '}' in repetition");
      Advance(1);
      if (rep.max != Expr::kUnbounded && rep.max < rep.min) {
        return Error("repetition maximum below minimum");
      }
    }
    rep.children.push_back(std::move(e));
    if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '+' || s_[pos_] == '?')) {
      return Error("repetition of a repetition (use a group)");
    }
    return rep;
  }

  StatusOr<int> Number() {
    size_t start = pos_;
    long v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + (s_[pos_] - '0');
      if (v > 1000000) return Error("repetition count too large");
      Advance(1);
    }
    if (pos_ == start) return Error("expected a number");
    return static_cast<int>(v);
  }

  StatusOr<Expr> Primary() {
    Expr e;
    e.line = line_, e.column = Column();
    char c = s_[pos_];
    if (c == '"' || c == '\'') {
      e.kind = Expr::Kind::kLiteral;
      Advance(1);
      while (true) {
        if (pos_ >= s_.size() || s_[pos_] == '\n') {
          return ErrorAt(e.line, e.column, "unterminated string literal");
        }
        if (s_[pos_] == c) break;
        DI_ASSIGN_OR_RETURN(uint32_t cp, Char());
        AppendUtf8(cp, &e.text);
      }
      Advance(1);
      return e;
    }
    if (c == '[') return Class();
    if (c == '.') {
      Advance(1);
      e.kind = Expr::Kind::kClass;
      e.char_class.AddRange(0, kMaxCodePoint);
      return e;
    }
    if (c == '(') {
      Advance(1);
      DI_ASSIGN_OR_RETURN(Expr inner, Choice());
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ')') return Error("expected ')'");
      Advance(1);
      return inner;
    }
    if (IsNameStart(c)) {
      e.kind = Expr::Kind::kRuleRef;
      e.text = Name();
      return e;
    }
    return Error("expected a literal, class, group or rule name");
  }

  StatusOr<Expr> Class() {
    Expr e;
    e.kind = Expr::Kind::kClass;
    e.line = line_, e.column = Column();
    Advance(1);  // [
    bool negate = false;
    if (pos_ < s_.size() && s_[pos_] == '^') negate = true, Advance(1);
    CharClass cls;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') {
        return ErrorAt(e.line, e.column, "unterminated character class");
      }
      if (s_[pos_] == ']') break;
      DI_ASSIGN_OR_RETURN(uint32_t lo, Char());
      uint32_t hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']' && s_[pos_ + 1] != '\n') {
        Advance(1);
        DI_ASSIGN_OR_RETURN(hi, Char());
        if (hi < lo) return Error("character range out of order");
      }
      cls.AddRange(lo, hi);
    }
    Advance(1);
    e.char_class = negate ? cls.Complement() : cls;
    return e;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded character.
  StatusOr<uint32_t> Char() {
    if (s_[pos_] != '\\') {
      std::string rest(s_.substr(pos_, 4));
      size_t p = 0;
      int32_t cp = DecodeUtf8(rest, &p);
      if (cp < 0) return Error("invalid UTF-8");
      Advance(p);
      return static_cast<uint32_t>(cp);
    }
    Advance(1);
    if (pos_ >= s_.size()) return Error("dangling backslash");
    char c = s_[pos_];
    Advance(1);
    switch (c) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        return 0;
      case 'x':
        return Hex(2);
      case 'u':
        return Hex(4);
      case 'U':
        return Hex(8);
      default:
        if (std::isalnum(static_cast<unsigned char>(c))) {
          return Error(std::string("unknown escape '\\") + c + "'");
        }
        return static_cast<uint32_t>(static_cast<unsigned char>(c));
    }
  }

  StatusOr<uint32_t> Hex(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_]))) {
        return Error("expected " + std::to_string(n) + " hex digits");
      }
      char c = s_[pos_];
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
      Advance(1);
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) return Error("invalid code point");
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

StatusOr<std::vector<RuleDef>> ParseEbnf(std::string_view text) { return Parser(text).Parse(); }

StatusOr<std::shared_ptr<const Grammar>> BuildEbnfGrammar(std::string_view text,
                                                          const std::string& root) {
  DI_ASSIGN_OR_RETURN(std::vector<RuleDef> defs, ParseEbnf(text));
  return Grammar::Build(defs, root);
}

std::string EbnfQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace deepinfer::structured
