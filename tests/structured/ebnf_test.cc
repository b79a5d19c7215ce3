#include <gtest/gtest.h>

#include "structured/ebnf_parser.h"
#include "test_util.h"

namespace deepinfer::structured {
namespace {

using testing::ByteVocabulary;
using testing::FullMatch;
using testing::PrefixMatch;

std::shared_ptr<const CompiledGrammar> Compile(const std::string& ebnf) {
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileEbnf(ebnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

TEST(Ebnf, LiteralsAlternationGroupsAndRepetition) {
  auto g = Compile(R"(
    root ::= greeting (", " name)* "!"   # a comment
    greeting ::= "hello" | 'hi'
    name ::= [A-Z] [a-z]+
  )");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "hello!"));
  EXPECT_TRUE(FullMatch(g, "hi, Bob, Alice!"));
  EXPECT_FALSE(FullMatch(g, "hi, bob!"));
  EXPECT_FALSE(FullMatch(g, "hi, B!"));
  EXPECT_FALSE(FullMatch(g, "hello"));
  EXPECT_TRUE(PrefixMatch(g, "hello, Al"));
  EXPECT_FALSE(PrefixMatch(g, "hey"));
}

TEST(Ebnf, BoundedRepetition) {
  auto g = Compile("root ::= [0-9]{2,4} \"x\"? [a-c]{3}");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "12abc"));
  EXPECT_TRUE(FullMatch(g, "1234xccc"));
  EXPECT_FALSE(FullMatch(g, "1abc"));
  EXPECT_FALSE(FullMatch(g, "12345abc"));
  EXPECT_FALSE(FullMatch(g, "12ab"));
  EXPECT_FALSE(FullMatch(g, "12abcc"));
  auto exact = Compile("root ::= \"a\"{3}");
  EXPECT_TRUE(FullMatch(exact, "aaa"));
  EXPECT_FALSE(FullMatch(exact, "aa"));
  EXPECT_FALSE(FullMatch(exact, "aaaa"));
  auto open = Compile("root ::= \"a\"{2,}");
  EXPECT_FALSE(FullMatch(open, "a"));
  EXPECT_TRUE(FullMatch(open, "aaaaaaa"));
}

TEST(Ebnf, EscapesAndNegatedClasses) {
  auto g = Compile(R"(root ::= "\"" [^"\\\n]* "\"" "\t\x41\u00e9")");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "\"a b\"\tA\xC3\xA9"));
  EXPECT_FALSE(FullMatch(g, "\"a\nb\"\tA\xC3\xA9"));
  EXPECT_FALSE(FullMatch(g, "\"a\"b\"\tA\xC3\xA9"));
}

TEST(Ebnf, Utf8ClassesAreMatchedBytewiseWithoutDeadEnds) {
  // [é-ê] is U+00E9..U+00EA: C3 A9 / C3 AA. Lead byte C3 is fine, C4 is not.
  auto g = Compile("root ::= [\\u00e9-\\u00ea] \"!\" | [\\u4e00-\\u4e01]");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(PrefixMatch(g, "\xC3"));
  EXPECT_FALSE(PrefixMatch(g, "\xC4"));
  EXPECT_FALSE(PrefixMatch(g, "\xC3\xA8"));
  EXPECT_TRUE(FullMatch(g, "\xC3\xAA!"));
  EXPECT_TRUE(FullMatch(g, "\xE4\xB8\x80"));  // U+4E00
  EXPECT_TRUE(PrefixMatch(g, "\xE4\xB8"));
  EXPECT_FALSE(PrefixMatch(g, "\xE4\xB9"));  // U+4E40.. is outside
  EXPECT_FALSE(PrefixMatch(g, "\xED\xA0"));  // surrogates never
  // `.` takes any scalar value but no invalid UTF-8.
  auto dot = Compile("root ::= . .");
  EXPECT_TRUE(FullMatch(dot, "a\xF0\x9F\x98\x80"));
  EXPECT_FALSE(PrefixMatch(dot, "\xC0\x80"));  // overlong
  EXPECT_FALSE(PrefixMatch(dot, "\xFF"));
}

TEST(Ebnf, NullableRulesAndRecursion) {
  auto g = Compile(R"(
    root ::= list
    list ::= "[" (item ("," item)*)? "]"
    item ::= list | [0-9] | opt "x"
    opt ::= "y"?
  )");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "[]"));
  EXPECT_TRUE(FullMatch(g, "[[1,[]],x,yx]"));
  EXPECT_FALSE(FullMatch(g, "[[1,[]],x,y]"));
  EXPECT_FALSE(FullMatch(g, "[1,]"));
}

Status ParseError(const std::string& ebnf) {
  auto g = BuildEbnfGrammar(ebnf);
  return g.ok() ? Status::Ok() : g.status();
}

TEST(Ebnf, ErrorsNameTheProblemAndPosition) {
  Status s = ParseError("root ::= \"a\" b\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1:14: undefined rule 'b'"), std::string::npos) << s.message();
  s = ParseError("root ::= \"a\"\n  x ::= \"unterminated\n");
  EXPECT_NE(s.message().find("2:9: unterminated string literal"), std::string::npos) << s.message();
  s = ParseError("root ::= [a-\n");
  EXPECT_NE(s.message().find("1:10"), std::string::npos) << s.message();
  s = ParseError("root = \"a\"");
  EXPECT_NE(s.message().find("1:6: expected '::='"), std::string::npos) << s.message();
  s = ParseError("root ::= (\"a\" | \"b\"");
  EXPECT_NE(s.message().find("expected ')'"), std::string::npos) << s.message();
  s = ParseError("root ::= \"a\"{3,2}");
  EXPECT_NE(s.message().find("maximum below minimum"), std::string::npos) << s.message();
  s = ParseError("root ::= root \"a\" | \"b\"");
  EXPECT_NE(s.message().find("left recursion"), std::string::npos) << s.message();
  s = ParseError("root ::= \"a\" root");
  EXPECT_NE(s.message().find("cannot derive any finite string"), std::string::npos) << s.message();
  s = ParseError("root ::= \"a\"\nroot ::= \"b\"");
  EXPECT_NE(s.message().find("defined twice"), std::string::npos) << s.message();
  s = ParseError("start ::= \"a\"");
  EXPECT_NE(s.message().find("no rule 'root'"), std::string::npos) << s.message();
  s = ParseError("root ::= \"\\q\"");
  EXPECT_NE(s.message().find("unknown escape"), std::string::npos) << s.message();
  EXPECT_TRUE(ParseError("root ::= \"\"").ok());
}

TEST(Ebnf, CompilerCachesByContent) {
  GrammarCompiler compiler(ByteVocabulary());
  auto a = compiler.CompileEbnf("root ::= \"a\"");
  auto b = compiler.CompileEbnf("root ::= \"a\"");
  auto c = compiler.CompileEbnf("root ::= \"b\"");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ(compiler.cache_hits(), 1u);
  EXPECT_EQ(compiler.cache_size(), 2u);
}

// The cache keeps at most max_cached grammars and about max_cached_bytes of them (precomputed
// mask entries make a grammar megabytes), dropping the oldest first.
TEST(Ebnf, CompilerCacheIsBoundedByCountAndBytes) {
  GrammarCompiler by_count(ByteVocabulary(), 2);
  for (const char* g : {"root ::= \"a\"", "root ::= \"b\"", "root ::= \"c\""}) {
    ASSERT_TRUE(by_count.CompileEbnf(g).ok());
  }
  EXPECT_EQ(by_count.cache_size(), 2u);
  ASSERT_TRUE(by_count.CompileEbnf("root ::= \"c\"").ok());
  EXPECT_EQ(by_count.cache_hits(), 1u);  // the newest kept
  ASSERT_TRUE(by_count.CompileEbnf("root ::= \"a\"").ok());
  EXPECT_EQ(by_count.cache_hits(), 1u);  // the oldest dropped

  auto vocab = ByteVocabulary();
  GrammarCompiler probe(vocab);
  probe.set_precompute_seconds(60.0);
  auto one = probe.CompileEbnf("root ::= [a-z]+ \"!\"");
  ASSERT_TRUE(one.ok());
  const size_t bytes = (*one)->memory_bytes();
  EXPECT_GT(bytes, 0u);
  GrammarCompiler by_bytes(vocab, 512, CompiledGrammar::kRefineThreshold, bytes * 5 / 2);
  by_bytes.set_precompute_seconds(60.0);
  for (const char* g :
       {"root ::= [a-z]+ \"!\"", "root ::= [a-z]+ \"?\"", "root ::= [a-z]+ \".\""}) {
    ASSERT_TRUE(by_bytes.CompileEbnf(g).ok());
  }
  EXPECT_EQ(by_bytes.cache_size(), 2u);
}

}  // namespace
}  // namespace deepinfer::structured
