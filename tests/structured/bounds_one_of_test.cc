// Exact number bounds (compared with a validator's double arithmetic on brute-forced decimals)
// and oneOf exclusivity (decided cases compile, overlapping ones are explicit errors).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "test_util.h"

namespace deepinfer::structured {
namespace {

using testing::ByteVocabulary;
using testing::FullMatch;

using testing::Schema;

TEST(NumberBounds, FractionalBoundsAreExact) {
  struct Case {
    const char* schema;
    std::vector<const char*> ok, bad;
  };
  const std::vector<Case> cases = {
      {R"({"type": "number", "minimum": 0.5, "maximum": 3})",
       {"0.5", "0.50", "0.51", "1", "3", "3.0", "2.75", "1.0"},
       {"0.49", "0.4999999", "3.01", "3.0000001", "0", "-1", "4"}},
      {R"({"type": "number", "exclusiveMinimum": 0})",
       {"0.0001", "3.14159", "5", "0.000000000000000000001"},
       {"0", "0.0", "0.000", "-0.5", "-0"}},
      {R"({"type": "number", "exclusiveMaximum": 1.5, "minimum": -2.25})",
       {"1.4999", "1.4", "-2.25", "-2.2", "-0", "0"},
       {"1.5", "1.50", "1.6", "-2.26", "-2.250001", "-3"}},
      {R"({"type": "number", "minimum": -2.25, "maximum": -1.5})",
       {"-2.25", "-1.5", "-1.75", "-2", "-1.500"},
       {"-2.26", "-1.49", "-1.4999", "0", "-0", "-3"}},
      {R"({"type": "number", "minimum": 0.25, "maximum": 0.75})",
       {"0.25", "0.5", "0.75", "0.750", "0.3333"},
       {"0.2", "0.8", "0.7500001", "0.2499", "1", "0"}},
      {R"({"type": "number", "minimum": 1.5, "maximum": 1.5})",
       {"1.5", "1.50"},
       {"1.4", "1.6", "1"}},
  };
  for (const Case& c : cases) {
    auto g = Schema(c.schema);
    ASSERT_NE(g, nullptr);
    for (const char* s : c.ok) EXPECT_TRUE(FullMatch(g, s)) << c.schema << " should accept " << s;
    for (const char* s : c.bad) EXPECT_FALSE(FullMatch(g, s)) << c.schema << " accepts " << s;
  }
  GrammarCompiler compiler(ByteVocabulary());
  auto empty = compiler.CompileJsonSchema(R"({"type": "number", "minimum": 2.5, "maximum": 2.25})");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no number"), std::string::npos);
}

// Random bounds with up to 3 fraction digits against random decimals with up to 5: accepted
// exactly when a validator comparing doubles accepts (no decimal here is within an ulp of a
// bound, where the grammar may be stricter).
TEST(NumberBounds, BruteForceAgreesWithDoubleComparison) {
  std::mt19937 rng(11);
  auto decimal = [&](int max_frac, int range) {
    std::string s = std::to_string(static_cast<int>(rng() % (2 * range + 1)) - range);
    const int frac = static_cast<int>(rng() % (max_frac + 1));
    if (frac > 0) {
      s += ".";
      for (int i = 0; i < frac; ++i) s += static_cast<char>('0' + rng() % 10);
    }
    if (s[0] == '-' && std::strtod(s.c_str(), nullptr) == 0.0 && rng() % 2) s = s.substr(1);
    return s;
  };
  for (int round = 0; round < 40; ++round) {
    const std::string a = decimal(3, 4), b = decimal(3, 4);
    double lo = std::strtod(a.c_str(), nullptr), hi = std::strtod(b.c_str(), nullptr);
    if (lo > hi) std::swap(lo, hi);
    const bool lo_excl = rng() % 2, hi_excl = rng() % 2;
    if (lo == hi && (lo_excl || hi_excl)) continue;
    nlohmann::json schema = {{"type", "number"}};
    schema[lo_excl ? "exclusiveMinimum" : "minimum"] = lo;
    schema[hi_excl ? "exclusiveMaximum" : "maximum"] = hi;
    auto g = Schema(schema.dump());
    ASSERT_NE(g, nullptr) << schema.dump();
    for (int k = 0; k < 150; ++k) {
      const std::string x = decimal(5, 5);
      const double v = std::strtod(x.c_str(), nullptr);
      const bool valid = (lo_excl ? v > lo : v >= lo) && (hi_excl ? v < hi : v <= hi);
      EXPECT_EQ(FullMatch(g, x), valid) << schema.dump() << " on " << x;
    }
  }
}

TEST(OneOf, ExclusiveBranchesCompile) {
  for (const char* schema : {
           R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})",
           R"({"oneOf": [{"enum": ["x", "y"]}, {"enum": ["z", 1]}, {"type": "boolean"}]})",
           R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
               "required": ["a"]}, {"type": "object", "properties": {"b": {"type": "integer"}},
               "required": ["b"]}]})",
           R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}},
               "required": ["kind"], "additionalProperties": true},
               {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}}}]})",
           R"({"$defs": {"o": {"type": "object"}}, "oneOf": [{"$ref": "#/$defs/o"},
               {"type": "null"}]})",
           R"({"type": "object", "oneOf": [{"properties": {"t": {"const": 1}}, "required": ["t"]},
               {"properties": {"t": {"const": 2}}, "required": ["t"]}]})",
       }) {
    EXPECT_NE(Schema(schema), nullptr) << schema;
  }
}

TEST(OneOf, OverlappingBranchesAreExplicitErrors) {
  for (const char* schema : {
           R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})",
           R"({"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "minLength": 5}]})",
           R"({"oneOf": [{"enum": ["x", "y"]}, {"const": "y"}]})",
           R"({"oneOf": [{"enum": [1, "a"]}, {"type": "string"}]})",
           R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
               "required": ["a"], "additionalProperties": true},
               {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]})",
           R"({"oneOf": [{"type": "number", "maximum": 0}, {"type": "number", "minimum": 1}]})",
           R"({"oneOf": [{}, {"type": "null"}, {"type": "string"}]})",
           R"({"oneOf": [{"type": "array"}, {"type": "array", "minItems": 2}]})",
       }) {
    auto e = JsonSchemaToEbnf(schema);
    ASSERT_FALSE(e.ok()) << schema;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("unsupported: oneOf with overlapping branches"),
              std::string::npos)
        << schema << ": " << e.status().message();
  }
}

}  // namespace
}  // namespace deepinfer::structured
