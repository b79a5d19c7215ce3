#include <gtest/gtest.h>

#include "structured/regex_converter.h"
#include "test_util.h"

namespace deepinfer::structured {
namespace {

using testing::ByteVocabulary;
using testing::FullMatch;

std::shared_ptr<const CompiledGrammar> Regex(const std::string& pattern) {
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileRegex(pattern);
  EXPECT_TRUE(g.ok()) << pattern << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

struct Case {
  const char* pattern;
  std::vector<const char*> match, no_match;
};

TEST(Regex, AcceptsAndRejects) {
  const std::vector<Case> cases = {
      {"^[a-z]+$", {"a", "hello"}, {"", "Hello", "a1"}},
      {"\\d{3}-\\d{4}", {"555-1234"}, {"55-1234", "555-12345", "abc-defg"}},
      {"(?:ab|cd)*e?", {"", "abcd", "cdabe", "e"}, {"abc", "ee"}},
      {"colou?r", {"color", "colour"}, {"colouur"}},
      {"a{2,}b{0,1}", {"aa", "aaab"}, {"a", "aabb"}},
      {"[^\\s,]+(,[^\\s,]+)*", {"x", "x,y,zz"}, {"x,", "x y", ",x"}},
      {"\\w+@\\w+\\.com", {"joe@mail.com"}, {"joe@mail.org", "@mail.com"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\\\\\/", {".*+?()[]{}\\/"}, {"x"}},
      {"(?<year>\\d{4})-(\\d{2})", {"2024-01"}, {"24-01"}},
      {"[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?", {"1", "-2.5e10", ".5", "3."}, {"e5", "."}},
      {"\\u00e9\\x41.",
       {"\xC3\xA9"
        "A!",
        "\xC3\xA9"
        "A\xC3\xA9"},
       {"\xC3\xA9"
        "A\n"}},
      {"a|b|", {"a", "b", ""}, {"ab"}},
      {"x{2}", {"xx"}, {"x", "xxx"}},
      {"[\\d\\-a-c]+", {"1-a", "cc"}, {"d"}},
      {"a{,2}", {"a{,2}"}, {"aa"}},  // not a quantifier: literal text
  };
  for (const Case& c : cases) {
    auto g = Regex(c.pattern);
    ASSERT_NE(g, nullptr);
    for (const char* s : c.match) EXPECT_TRUE(FullMatch(g, s)) << c.pattern << " vs '" << s << "'";
    for (const char* s : c.no_match) {
      EXPECT_FALSE(FullMatch(g, s)) << c.pattern << " vs '" << s << "'";
    }
  }
}

TEST(Regex, UnsupportedFeaturesAreClearErrors) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"(a)\\1", "backreferences"},
      {"a(?=b)", "lookaround"},
      {"a(?!b)", "lookaround"},
      {"\\bword", "word boundary"},
      {"a^b", "'^' anchor"},
      {"a$b", "'$' anchor"},
      {"\\p{NoSuchProperty}", "unknown Unicode property"},
      {"\\pL", "\\p needs {Name}"},
      {"\\p{L", "unterminated"},
      {"(ab", "missing ')'"},
      {"ab)", "unbalanced ')'"},
      {"[abc", "unterminated character class"},
      {"*a", "quantifier without an operand"},
      {"a**", "nested quantifier"},
      {"[z-a]", "out of order"},
      {"a{3,1}", "maximum below minimum"},
  };
  for (const auto& [pattern, what] : cases) {
    auto e = RegexToEbnf(pattern);
    ASSERT_FALSE(e.ok()) << pattern;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(what), std::string::npos)
        << pattern << ": " << e.status().message();
  }
}

// Unicode property escapes (ECMAScript unicode mode): General_Category values, scripts, binary
// properties and their complements, also inside a class, from ICU's tables.
TEST(Regex, UnicodePropertyEscapes) {
  struct Case {
    const char* pattern;
    std::vector<const char*> match, reject;
  };
  const std::vector<Case> cases = {
      {"\\p{Letter}+", {"Hello", "π", "日本", "É"}, {"123", "a1", "", "-"}},
      {"\\p{L}\\p{Nd}", {"a1", "ж٣"}, {"1a", "aa"}},
      {"\\p{Lu}+", {"ABC", "ΩΣ"}, {"abc", "Ab"}},
      {"\\P{L}+", {"123", "-+"}, {"a", "1a"}},
      {"\\p{Script=Greek}+", {"αβγ"}, {"abc"}},
      {"[\\p{Ll}0-9]+", {"ab12", "ß9"}, {"AB"}},
      {"\\p{Alphabetic}", {"x"}, {"7"}},
  };
  for (const Case& c : cases) {
    auto g = Regex(c.pattern);
    ASSERT_NE(g, nullptr) << c.pattern;
    for (const char* ok : c.match) EXPECT_TRUE(FullMatch(g, ok)) << c.pattern << " vs " << ok;
    for (const char* bad : c.reject) EXPECT_FALSE(FullMatch(g, bad)) << c.pattern << " vs " << bad;
  }
}

TEST(Regex, JsonStringContentEscapesQuotesAndBackslashes) {
  auto e = RegexToEbnfExpression("a\"b\\\\c[^x]", /*json_string_content=*/true);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileEbnf("root ::= " + *e);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(FullMatch(*g, "a\\\"b\\\\cy"));
  EXPECT_FALSE(FullMatch(*g, "a\"b\\cy"));
  EXPECT_FALSE(FullMatch(*g, "a\\\"b\\\\c\""));  // a class never yields a raw quote
  EXPECT_FALSE(FullMatch(*g, "a\\\"b\\\\c\n"));  // nor a control character
}

}  // namespace
}  // namespace deepinfer::structured
