#include "structured/regex_converter.h"

#include <unicode/uniset.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <cctype>
#include <cstdio>

#include "structured/char_class.h"
#include "structured/ebnf_parser.h"

namespace deepinfer::structured {
namespace {

CharClass Digits() {
  CharClass c;
  c.AddRange('0', '9');
  return c;
}
CharClass Word() {
  CharClass c = Digits();
  c.AddRange('a', 'z');
  c.AddRange('A', 'Z');
  c.Add('_');
  return c;
}
CharClass Space() {
  CharClass c;
  for (uint32_t cp : {0x20u, 0x09u, 0x0Au, 0x0Du, 0x0Cu, 0x0Bu}) c.Add(cp);  // space \t \n \r \f \v
  for (uint32_t cp : {0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
    c.Add(cp);
  }
  c.AddRange(0x2000, 0x200A);
  return c;
}

class RegexParser {
 public:
  RegexParser(std::string_view p, bool json, const CharClass* excluded, std::string search_any)
      : s_(p), json_(json), excluded_(excluded), any_(std::move(search_any)) {}

  StatusOr<std::string> Parse() {
    DI_ASSIGN_OR_RETURN(std::string e, Alternation());
    if (pos_ < s_.size()) {
      if (s_[pos_] == ')') return Error("unbalanced ')'");
      return Error("unexpected character");
    }
    return e.empty() ? std::string("\"\"") : e;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("regex: " + what + " at offset " + std::to_string(pos_) + " in '" +
                           std::string(s_) + "'");
  }
  bool AtEnd() const { return pos_ >= s_.size(); }

  StatusOr<std::string> Alternation() {
    std::vector<std::string> alts;
    const bool top = depth_ == 0;
    while (true) {
      // A top-level alternative may start with ^ and end with $; in search mode the sides
      // without an anchor match anything.
      const bool anchored_start = top && !AtEnd() && s_[pos_] == '^';
      if (anchored_start) ++pos_;
      anchored_end_ = false;
      DI_ASSIGN_OR_RETURN(std::string seq, Sequence());
      if (top && !any_.empty()) {
        const std::string free = "(" + any_ + ")*";
        if (seq.empty()) {
          if (!anchored_start || !anchored_end_) seq = free;  // the empty pattern: anything
        } else {
          if (!anchored_start) seq.insert(0, free + " ");
          if (!anchored_end_) seq.append(" " + free);
        }
      }
      alts.push_back(seq.empty() ? "\"\"" : seq);
      if (!AtEnd() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
  }

  StatusOr<std::string> Sequence() {
    std::string out;
    while (!AtEnd() && s_[pos_] != '|' && s_[pos_] != ')') {
      if (s_[pos_] == '$') {
        if (depth_ == 0 && (pos_ + 1 == s_.size() || s_[pos_ + 1] == '|')) {
          ++pos_;
          anchored_end_ = true;
          break;
        }
        return Error("'$' anchor only supported at the end of a top-level alternative");
      }
      if (s_[pos_] == '^') {
        return Error("'^' anchor only supported at the start of a top-level alternative");
      }
      DI_ASSIGN_OR_RETURN(std::string atom, Atom());
      DI_ASSIGN_OR_RETURN(std::string quantified, Quantifier(atom));
      if (!out.empty()) out += ' ';
      out += quantified;
    }
    return out;
  }

  StatusOr<std::string> Quantifier(const std::string& atom) {
    if (AtEnd()) return atom;
    char c = s_[pos_];
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      size_t p = pos_ + 1;
      auto number = [&](long* v) {
        size_t start = p;
        *v = 0;
        while (p < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p]))) {
          *v = std::min(*v * 10 + (s_[p] - '0'), 1000000L);
          ++p;
        }
        return p > start;
      };
      long lo = 0, hi = 0;
      if (!number(&lo)) return atom;  // a literal '{' (ECMAScript annex B)
      bool comma = false, has_hi = false;
      if (p < s_.size() && s_[p] == ',') comma = true, ++p, has_hi = number(&hi);
      if (p >= s_.size() || s_[p] != '}') return atom;
      pos_ = p + 1;
      if (has_hi && hi < lo) return Error("quantifier maximum below minimum");
      q = "{" + std::to_string(lo) + (comma ? "," : "") + (has_hi ? std::to_string(hi) : "") + "}";
    } else {
      return atom;
    }
    if (!AtEnd() && s_[pos_] == '?') ++pos_;  // lazy: same language
    if (!AtEnd() && (s_[pos_] == '*' || s_[pos_] == '+' || s_[pos_] == '?' || s_[pos_] == '{')) {
      return Error("nested quantifier");
    }
    return "(" + atom + ")" + q;
  }

  StatusOr<std::string> Atom() {
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      if (s_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (s_.substr(pos_, 2) == "?=" || s_.substr(pos_, 2) == "?!" ||
                 s_.substr(pos_, 3) == "?<=" || s_.substr(pos_, 3) == "?<!") {
        return Error("lookaround is not supported");
      } else if (s_.substr(pos_, 2) == "?<" || s_.substr(pos_, 3) == "?P<") {
        size_t close = s_.find('>', pos_);
        if (close == std::string_view::npos) return Error("unterminated group name");
        pos_ = close + 1;
      } else if (!AtEnd() && s_[pos_] == '?') {
        return Error("unsupported group syntax '(?'");
      }
      ++depth_;
      DI_ASSIGN_OR_RETURN(std::string inner, Alternation());
      --depth_;
      if (AtEnd() || s_[pos_] != ')') return Error("missing ')'");
      ++pos_;
      return "(" + inner + ")";
    }
    if (c == '[') return ClassAtom();
    if (c == '.') {
      ++pos_;
      CharClass dot;
      dot.Add('\n');
      dot.Add('\r');
      return ClassText(dot.Complement());
    }
    if (c == '*' || c == '+' || c == '?') return Error("quantifier without an operand");
    if (c == '\\') {
      ++pos_;
      CharClass cls;
      uint32_t cp = 0;
      bool is_class = false;
      DI_RETURN_IF_ERROR(Escape(&cp, &cls, &is_class, /*in_class=*/false));
      return is_class ? ClassText(cls) : LiteralText(cp);
    }
    std::string rest(s_.substr(pos_, 4));
    size_t n = 0;
    int32_t cp = DecodeUtf8(rest, &n);
    if (cp < 0) return Error("invalid UTF-8");
    pos_ += n;
    return LiteralText(static_cast<uint32_t>(cp));
  }

  // After "\p" or "\P": "{Name}" or "{Name=Value}", a Unicode property as ECMAScript's unicode
  // mode writes it (General_Category values such as L / Letter / Lu, Script=Greek,
  // Script_Extensions=..., binary properties such as Alphabetic), looked up in ICU's tables.
  Status Property(CharClass* cls) {
    if (AtEnd() || s_[pos_] != '{') return Error("\\p needs {Name}");
    const size_t close = s_.find('}', pos_);
    if (close == std::string_view::npos) return Error("unterminated \\p{");
    const std::string name(s_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    for (const char ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '=') {
        return Error("invalid Unicode property name '" + name + "'");
      }
    }
    UErrorCode status = U_ZERO_ERROR;
    const icu::UnicodeSet set(icu::UnicodeString::fromUTF8("[\\p{" + name + "}]"), status);
    if (U_FAILURE(status)) return Error("unknown Unicode property '" + name + "'");
    *cls = CharClass();
    for (int32_t i = 0; i < set.getRangeCount(); ++i) {
      cls->AddRange(static_cast<uint32_t>(set.getRangeStart(i)),
                    static_cast<uint32_t>(set.getRangeEnd(i)));
    }
    return Status::Ok();
  }

  // After a backslash: a single character (*cp) or a class escape (*cls, *is_class).
  Status Escape(uint32_t* cp, CharClass* cls, bool* is_class, bool in_class) {
    if (AtEnd()) return Error("dangling backslash");
    char c = s_[pos_++];
    *is_class = false;
    switch (c) {
      case 'd':
        *cls = Digits(), *is_class = true;
        return Status::Ok();
      case 'D':
        *cls = Digits().Complement(), *is_class = true;
        return Status::Ok();
      case 'w':
        *cls = Word(), *is_class = true;
        return Status::Ok();
      case 'W':
        *cls = Word().Complement(), *is_class = true;
        return Status::Ok();
      case 's':
        *cls = Space(), *is_class = true;
        return Status::Ok();
      case 'S':
        *cls = Space().Complement(), *is_class = true;
        return Status::Ok();
      case 'n':
        *cp = '\n';
        return Status::Ok();
      case 'r':
        *cp = '\r';
        return Status::Ok();
      case 't':
        *cp = '\t';
        return Status::Ok();
      case 'f':
        *cp = '\f';
        return Status::Ok();
      case 'v':
        *cp = '\v';
        return Status::Ok();
      case '0':
        *cp = 0;
        return Status::Ok();
      case 'b':
        if (in_class) {
          *cp = '\b';
          return Status::Ok();
        }
        return Error("word boundary \\b is not supported");
      case 'p':
      case 'P':
        DI_RETURN_IF_ERROR(Property(cls));
        if (c == 'P') *cls = cls->Complement();
        *is_class = true;
        return Status::Ok();
      case 'x':
        return Hex(2, cp);
      case 'u':
        if (!AtEnd() && s_[pos_] == '{') {
          size_t close = s_.find('}', pos_);
          if (close == std::string_view::npos) return Error("unterminated \\u{");
          ++pos_;
          return Hex(static_cast<int>(close - pos_), cp, /*skip_close=*/true);
        }
        return Hex(4, cp);
      default:
        if (std::isdigit(static_cast<unsigned char>(c))) {
          return Error("backreferences are not supported");
        }
        if (std::isalpha(static_cast<unsigned char>(c))) {
          return Error(std::string("unsupported escape '\\") + c + "'");
        }
        *cp = static_cast<unsigned char>(c);
        return Status::Ok();
    }
  }

  Status Hex(int n, uint32_t* cp, bool skip_close = false) {
    if (n <= 0 || n > 6) return Error("bad hex escape");
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (AtEnd() || !std::isxdigit(static_cast<unsigned char>(s_[pos_]))) {
        return Error("bad hex escape");
      }
      char c = s_[pos_++];
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (skip_close) ++pos_;
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return Error("code point is not a Unicode scalar value");
    }
    *cp = v;
    return Status::Ok();
  }

  StatusOr<std::string> ClassAtom() {
    ++pos_;  // [
    bool negate = false;
    if (!AtEnd() && s_[pos_] == '^') negate = true, ++pos_;
    CharClass cls;
    bool first = true;
    while (true) {
      if (AtEnd()) return Error("unterminated character class");
      if (s_[pos_] == ']' && !first) break;
      if (s_[pos_] == ']' && first) {  // "[]" matches nothing, "[^]" anything
        break;
      }
      first = false;
      uint32_t lo = 0;
      CharClass item;
      bool is_class = false;
      DI_RETURN_IF_ERROR(ClassChar(&lo, &item, &is_class));
      if (is_class) {
        cls.AddClass(item);
        continue;
      }
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        DI_RETURN_IF_ERROR(ClassChar(&hi, &item, &is_class));
        if (is_class) return Error("class escape as a range bound");
        if (hi < lo) return Error("character range out of order");
        cls.AddRange(lo, hi);
      } else {
        cls.Add(lo);
      }
    }
    ++pos_;  // ]
    return ClassText(negate ? cls.Complement() : cls);
  }

  Status ClassChar(uint32_t* cp, CharClass* cls, bool* is_class) {
    *is_class = false;
    if (s_[pos_] == '\\') {
      ++pos_;
      return Escape(cp, cls, is_class, /*in_class=*/true);
    }
    std::string rest(s_.substr(pos_, 4));
    size_t n = 0;
    int32_t v = DecodeUtf8(rest, &n);
    if (v < 0) return Error("invalid UTF-8");
    pos_ += n;
    *cp = static_cast<uint32_t>(v);
    return Status::Ok();
  }

  std::string ClassText(CharClass cls) const {
    if (excluded_ != nullptr) cls = cls.Minus(*excluded_);
    if (json_) {
      CharClass banned;
      banned.AddRange(0, 0x1F);
      banned.Add('"');
      banned.Add('\\');
      cls = cls.Minus(banned);
    }
    return cls.ToEbnf();  // an empty class is a valid element that matches nothing
  }

  std::string LiteralText(uint32_t cp) const {
    std::string bytes;
    const bool excluded = excluded_ != nullptr && excluded_->Contains(cp);
    if (excluded && !json_) return CharClass().ToEbnf();  // never written raw: matches nothing
    if (json_ && (cp < 0x20 || cp == '"' || cp == '\\' || excluded)) {
      switch (cp) {
        case '"':
          bytes = "\\\"";
          break;
        case '\\':
          bytes = "\\\\";
          break;
        case '\n':
          bytes = "\\n";
          break;
        case '\r':
          bytes = "\\r";
          break;
        case '\t':
          bytes = "\\t";
          break;
        default: {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
          bytes = buf;
        }
      }
    } else {
      AppendUtf8(cp, &bytes);
    }
    return EbnfQuote(bytes);
  }

  std::string_view s_;
  bool json_;
  const CharClass* excluded_;
  std::string any_;  // search mode: one character of the free sides; empty = whole match
  size_t pos_ = 0;
  int depth_ = 0;              // group nesting
  bool anchored_end_ = false;  // the top-level alternative just parsed ended with $
};

}  // namespace

StatusOr<std::string> RegexToEbnfExpression(std::string_view pattern, bool json_string_content,
                                            const CharClass* excluded,
                                            const std::string& search_any) {
  return RegexParser(pattern, json_string_content, excluded, search_any).Parse();
}

StatusOr<std::string> RegexToEbnf(std::string_view pattern) {
  DI_ASSIGN_OR_RETURN(std::string e, RegexToEbnfExpression(pattern, false, nullptr));
  return "root ::= " + e + "\n";
}

}  // namespace deepinfer::structured
