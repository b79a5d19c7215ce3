#include <gtest/gtest.h>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "structured/json_schema_unique.h"
#include "structured/schema_resources.h"
#include "test_util.h"

namespace deepinfer::structured {
namespace {

using testing::ByteVocabulary;
using testing::FullMatch;
using testing::NotStrict;

using testing::Schema;

TEST(JsonSchema, ObjectsFollowPropertyOrderAndRequired) {
  auto g = Schema(R"({"type": "object", "properties": {"a": {"type": "integer"},
      "b": {"type": "string"}}, "required": ["b"]})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"b":"x"})"));
  EXPECT_TRUE(FullMatch(g, R"({"a": 1, "b": "x"})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":1})"));          // b required
  EXPECT_FALSE(FullMatch(g, R"({"b":"x","a":1})"));  // schema order
  EXPECT_FALSE(FullMatch(g, R"({"b":"x","c":1})"));  // no extra properties by default
  EXPECT_FALSE(FullMatch(g, R"({ "b":"x"})"));       // compact: no space after {
  EXPECT_FALSE(FullMatch(g, R"({"b":  "x"})"));      // at most one space
}

TEST(JsonSchema, AdditionalPropertiesNeverRepeatDeclaredKeys) {
  auto g = Schema(R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "additionalProperties": {"type": "boolean"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"id":1,"x":true,"idx":false,"i":true})"));
  EXPECT_TRUE(FullMatch(g, R"({"x":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"id":1,"id":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"x":1})"));
}

TEST(JsonSchema, NumbersStringsArraysAndFormats) {
  auto ints = Schema(R"({"type": "integer", "minimum": -12, "exclusiveMaximum": 105})");
  for (const char* ok : {"-12", "-1", "0", "7", "99", "104"})
    EXPECT_TRUE(FullMatch(ints, ok)) << ok;
  for (const char* bad : {"-13", "105", "007", "-0", "1.5", "1e2"}) {
    EXPECT_FALSE(FullMatch(ints, bad)) << bad;
  }
  auto nums = Schema(R"({"type": "number", "minimum": 0.5, "maximum": 3})");
  for (const char* ok : {"1", "3", "2.75", "1.0"}) EXPECT_TRUE(FullMatch(nums, ok)) << ok;
  for (const char* bad : {"0", "3.5", "-1", "4"}) EXPECT_FALSE(FullMatch(nums, bad)) << bad;
  auto strs = Schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_TRUE(FullMatch(strs, R"("ab")"));
  EXPECT_TRUE(FullMatch(strs, R"("a\n\u00e9")"));
  EXPECT_FALSE(FullMatch(strs, R"("a")"));
  EXPECT_FALSE(FullMatch(strs, R"("abcd")"));
  auto arr = Schema(R"({"type": "array", "prefixItems": [{"type": "null"}],
      "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})");
  EXPECT_TRUE(FullMatch(arr, "[null,true]"));
  EXPECT_TRUE(FullMatch(arr, "[null, true, false]"));
  EXPECT_FALSE(FullMatch(arr, "[null]"));
  EXPECT_FALSE(FullMatch(arr, "[null,true,false,true]"));
  EXPECT_FALSE(FullMatch(arr, "[true,true]"));
  auto date = Schema(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(FullMatch(date, R"("2024-02-28T23:59:60Z")") == false);
  EXPECT_TRUE(FullMatch(date, R"("2024-02-28T23:59:59.123+05:30")"));
  EXPECT_FALSE(FullMatch(date, R"("2024-02-30T10:00:00Z")"));
  auto ip = Schema(R"({"type": "string", "format": "ipv4"})");
  EXPECT_TRUE(FullMatch(ip, R"("255.0.10.1")"));
  EXPECT_FALSE(FullMatch(ip, R"("256.0.0.1")"));
}

TEST(JsonSchema, RefsAnyOfAllOfAndEnum) {
  auto g = Schema(R"({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"},
      "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "required": ["v", "next"]}},
      "$ref": "#/$defs/n"})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(FullMatch(g, R"({"v":1,"next":{"v":2}})"));
  auto all = Schema(R"({"allOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
      {"properties": {"b": {"enum": ["x", null]}}, "required": ["b"]}]})");
  ASSERT_NE(all, nullptr);
  EXPECT_TRUE(FullMatch(all, R"({"a":1,"b":null})"));
  EXPECT_FALSE(FullMatch(all, R"({"a":1})"));
  EXPECT_FALSE(FullMatch(all, R"({"a":2,"b":"x"})"));
}

TEST(JsonSchema, UnsupportedKeywordsAndBadSchemasAreErrors) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems' is supported over items with"},
      {R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true})",
       "a small finite set of values"},
      {R"({"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true, "minItems": 3})",
       "the 2 distinct values uniqueItems allows"},
      {R"({"items": {"type": "integer", "minimum": 0, "maximum": 40}, "uniqueItems": true})",
       "grammar states"},
      {R"({"type": "number", "multipleOf": 0.123456789})",
       "'multipleOf' is supported for decimals"},
      {R"({"type": "number", "multipleOf": 1e300})", "'multipleOf' is supported for decimals"},
      {R"({"type": "integer", "multipleOf": 3, "maximum": 9})", "together with minimum/maximum"},
      {R"({"patternProperties": {"^a": {}}, "additionalProperties": true})",
       "'patternProperties' is supported where no extra keys are generated"},
      {R"({"dependentSchemas": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {"minProperties": 1}}})",
       "up to 4 trigger properties"},
      {R"({"if": {"required": ["a"]}, "then": {"required": ["b"]}})", "keyword 'if' is supported"},
      {R"({"not": {"type": "object", "required": ["a"]}})", "'not' is not supported"},
      {R"({"not": {}})", "nothing matches"},
      {R"({"type": "string", "format": "hostname"})", "format 'hostname' is not supported"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreferences"},
      {R"({"type": "strin"})", "unknown type 'strin'"},
      {R"({"$ref": "#/$defs/missing"})", "does not resolve"},
      {R"({"$ref": "http://x/y.json"})", "only references inside the schema resolve"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems above maxItems"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer"},
      {R"({"enum": []})", "non-empty array"},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "matches nothing"},
      {R"({"type": "object", "properties": )", "not valid JSON"},
  };
  for (const auto& [schema, what] : cases) {
    auto e = JsonSchemaToEbnf(schema);
    Status s = e.ok() ? BuildEbnfGrammar(*e).status() : e.status();
    ASSERT_FALSE(s.ok()) << schema;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(what), std::string::npos) << schema << ": " << s.message();
  }
}

// Issue 25's two correctness bugs: both produced output that does not validate.
TEST(JsonSchema, RequiredPropertiesNotListedFollowAdditionalProperties) {
  auto g = Schema(R"({"type": "object", "required": ["a"],
      "additionalProperties": {"type": "integer"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"a":1})"));
  EXPECT_TRUE(FullMatch(g, R"({"a":1,"b":2})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":"x"})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"b":2})"));
  const auto e =
      JsonSchemaToEbnf(R"({"type": "object", "required": ["a"], "additionalProperties": false})");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("additionalProperties false forbids it"), std::string::npos)
      << e.status().message();
}

TEST(JsonSchema, AllOfHonoursASchemaValuedAdditionalPropertiesBesideIt) {
  const auto e = JsonSchemaToEbnf(
      R"({"allOf": [{"properties": {"foo": {"type": "integer"}}, "required": ["foo"]}],
          "additionalProperties": {"type": "boolean"}})");
  ASSERT_FALSE(e.ok()) << *e;  // foo must be an integer and a boolean: nothing validates
  EXPECT_NE(e.status().message().find("do not intersect"), std::string::npos)
      << e.status().message();
  // Satisfiable: the listed property's value must meet both schemas.
  auto g = Schema(R"({"allOf": [{"properties": {"foo": {"type": "number"}}, "required": ["foo"]}],
      "additionalProperties": {"type": "integer"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"foo":789})"));
  EXPECT_FALSE(FullMatch(g, R"({"foo":7.5})"));
  // Two additionalProperties schemas both apply to an extra property.
  auto both = Schema(R"({"type": "object", "allOf": [
      {"additionalProperties": {"type": "integer"}}, {"additionalProperties": {"minimum": 3}}]})");
  ASSERT_NE(both, nullptr);
  EXPECT_TRUE(FullMatch(both, R"({"x":4})"));
  EXPECT_FALSE(FullMatch(both, R"({"x":2})"));
  EXPECT_FALSE(FullMatch(both, R"({"x":4.5})"));
}

TEST(JsonSchema, PatternIsASearchUnlessAnchored) {
  auto free = Schema(R"({"type": "string", "pattern": "ab+"})");
  for (const char* ok : {R"("ab")", R"("xxabbby")", R"("\nab\"")"}) {
    EXPECT_TRUE(FullMatch(free, ok)) << ok;
  }
  EXPECT_FALSE(FullMatch(free, R"("a b")"));
  auto start = Schema(R"({"type": "string", "pattern": "^ab"})");
  EXPECT_TRUE(FullMatch(start, R"("abzz")"));
  EXPECT_FALSE(FullMatch(start, R"("zab")"));
  auto whole = Schema(R"({"type": "string", "pattern": "^(ab|cd)$"})");
  EXPECT_TRUE(FullMatch(whole, R"("cd")"));
  EXPECT_FALSE(FullMatch(whole, R"("abcd")"));
  auto per_alternative = Schema(R"({"type": "string", "pattern": "^a|b$"})");
  EXPECT_TRUE(FullMatch(per_alternative, R"("axx")"));
  EXPECT_TRUE(FullMatch(per_alternative, R"("xxb")"));
  EXPECT_FALSE(FullMatch(per_alternative, R"("xax")"));
}

TEST(JsonSchema, UnknownKeywordsAndFormatsAreAnnotations) {
  auto g = Schema(R"({"type": "object", "self": {"vendor": "x"}, "readonly": true,
      "id": "urn:x", "example": 3, "properties": {"n": {"type": "integer", "_format": "x"},
      "s": {"type": "string", "format": "int64"}}, "required": ["n", "s"]})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"n":1,"s":"anything"})"));
  EXPECT_FALSE(FullMatch(g, R"({"n":"1","s":"x"})"));
  // Assertions we do not enforce stay refused; trivial uses of them are not.
  EXPECT_NE(Schema(R"({"type": "array", "uniqueItems": false})"), nullptr);
  EXPECT_NE(Schema(R"({"type": "object", "minProperties": 0, "patternProperties": {}})"), nullptr);
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "array", "uniqueItems": true})").ok());
}

TEST(JsonSchema, FalseSubschemasOnlyForbid) {
  auto g = Schema(R"({"type": "object", "properties": {"foo": {}, "bar": false},
      "additionalProperties": true})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"foo":1,"baz":2})"));
  EXPECT_FALSE(FullMatch(g, R"({"bar":1})"));
  EXPECT_FALSE(FullMatch(g, R"({"foo":1,"bar":2})"));
  auto any = Schema(R"({"anyOf": [false, {"type": "integer"}, false]})");
  EXPECT_TRUE(FullMatch(any, "5"));
  EXPECT_FALSE(FullMatch(any, R"("5")"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"anyOf": [false, false]})").ok());
}

TEST(JsonSchema, KeywordsWithoutTypeLeaveOtherTypesFree) {
  auto g = Schema(R"({"properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  for (const char* ok : {R"({"a":1})", "[1,2]", R"("x")", "3.5", "true", "null"}) {
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  }
  EXPECT_FALSE(FullMatch(g, R"({"a":"x"})"));
  EXPECT_FALSE(FullMatch(g, "{}"));
  auto n = Schema(R"({"minimum": 2})");
  EXPECT_TRUE(FullMatch(n, "2"));
  EXPECT_TRUE(FullMatch(n, R"("1")"));
  EXPECT_FALSE(FullMatch(n, "1"));
}

TEST(JsonSchema, PercentEncodedRefsAndTupleAdditionalItems) {
  auto g = Schema(R"({"$defs": {"a b": {"type": "integer"}, "c%d": {"type": "string"}},
      "type": "array", "items": [{"$ref": "#/$defs/a%20b"}, {"$ref": "#/$defs/c%25d"}],
      "additionalItems": {"type": "boolean"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"([1,"x",true,false])"));
  EXPECT_FALSE(FullMatch(g, R"([1,"x",2])"));
  auto closed = Schema(R"({"type": "array", "items": [{}], "additionalItems": false})");
  EXPECT_TRUE(FullMatch(closed, "[1]"));
  EXPECT_FALSE(FullMatch(closed, "[1,2]"));
}

// An items beside an allOf whose branch has prefixItems still applies to every element (it was
// merged as the items after that prefix: [3, 5] came out, which does not validate).
TEST(JsonSchema, AllOfMergesElementSchemasIndexByIndex) {
  auto g = Schema(R"({"type": "array", "allOf": [{"prefixItems": [{"minimum": 3}]}],
      "items": {"minimum": 5}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "[5,5]"));
  EXPECT_FALSE(FullMatch(g, "[3,5]"));
  EXPECT_FALSE(FullMatch(g, "[5,4]"));
  auto two = Schema(R"({"type": "array", "allOf": [{"prefixItems": [{"type": "integer"}]},
      {"prefixItems": [{"minimum": 1}, {"type": "string"}], "items": false}]})");
  ASSERT_NE(two, nullptr);
  EXPECT_TRUE(FullMatch(two, R"([1,"x"])"));
  EXPECT_TRUE(FullMatch(two, "[2]"));
  EXPECT_FALSE(FullMatch(two, R"([1.5,"x"])"));
  EXPECT_FALSE(FullMatch(two, R"([1,"x",3])"));
}

TEST(JsonSchema, NotOfTypesAndOfTrivialSchemas) {
  auto g = Schema(R"({"not": {"type": ["integer", "boolean"]}})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"1.5", "-0.25", R"("x")", "null", "[1]", "{}"}) {
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  }
  for (const char* bad : {"1", "1.0", "-3", "true", "1.50e1"})
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  auto anything = Schema(R"({"not": false})");
  EXPECT_TRUE(FullMatch(anything, "[true]"));
  auto forbidden = Schema(R"({"properties": {"foo": {"not": {}}, "bar": {}},
      "additionalProperties": true})");
  EXPECT_TRUE(FullMatch(forbidden, R"({"bar":1,"baz":2})"));
  EXPECT_FALSE(FullMatch(forbidden, R"({"foo":1})"));
  auto pruned = Schema(R"({"oneOf": [{"type": "integer"}, false, {"not": true}]})");
  EXPECT_TRUE(FullMatch(pruned, "3"));
  EXPECT_FALSE(FullMatch(pruned, "3.5"));
  auto tuple = Schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, false]})");
  EXPECT_TRUE(FullMatch(tuple, "[1]"));
  EXPECT_FALSE(FullMatch(tuple, "[1,2]"));
}

TEST(JsonSchema, RefsResolveAgainstIdsAndAnchors) {
  // A relative $ref resolves against the $id of the resource it is in, not the root's.
  auto g = Schema(R"({"$id": "http://example.com/root.json", "type": "object",
      "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "#top"},
                     "c": {"$ref": "http://example.com/nested/inner.json#/$defs/flag"}},
      "required": ["a", "b", "c"],
      "$defs": {
        "item": {"$id": "item.json", "type": "integer", "minimum": 10},
        "top": {"$anchor": "top", "type": "string", "maxLength": 2},
        "inner": {"$id": "nested/inner.json",
                  "$defs": {"flag": {"$ref": "#/$defs/bool"}, "bool": {"type": "boolean"}}}}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"a":10,"b":"xy","c":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":9,"b":"xy","c":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":10,"b":"xyz","c":true})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":10,"b":"xy","c":1})"));
  EXPECT_EQ(ResolveUri("http://x.com/a/b.json", "c.json"), "http://x.com/a/c.json");
  EXPECT_EQ(ResolveUri("http://x.com/a/b.json", "/d.json#f"), "http://x.com/d.json#f");
  EXPECT_EQ(ResolveUri("urn:uuid:1234", "#/x"), "urn:uuid:1234#/x");
  EXPECT_EQ(ResolveUri("", "int.json"), "int.json");
}

TEST(JsonSchema, MinAndMaxPropertiesCountTheWrittenProperties) {
  auto g = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
      "required": ["b"], "minProperties": 2, "maxProperties": 2})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {R"({"a":1,"b":2})", R"({"b":2,"c":3})"})
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  for (const char* bad : {R"({"b":2})", R"({"a":1,"b":2,"c":3})", R"({"a":1,"c":3})", "{}"}) {
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  }
  auto at_least = Schema(R"({"properties": {"a": {}, "b": {}}, "minProperties": 1})");
  EXPECT_TRUE(FullMatch(at_least, R"({"b":1})"));
  EXPECT_TRUE(FullMatch(at_least, R"({"a":1,"b":1})"));
  EXPECT_FALSE(FullMatch(at_least, "{}"));
  EXPECT_TRUE(FullMatch(at_least, "[]"));  // not an object: minProperties does not apply
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {}},
      "minProperties": 2})")
                   .ok());
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "additionalProperties": true,
      "maxProperties": 2})")
                   .ok());
}

// An object whose schema names no property takes any keys (an absent additionalProperties
// allows them), minProperties / maxProperties counting its pairs; one that names properties
// still gets no extra keys unless additionalProperties allows them.
TEST(JsonSchema, AnObjectThatNamesNoPropertyTakesAnyKeys) {
  auto any = Schema(R"({"type": "object"})");
  ASSERT_NE(any, nullptr);
  for (const char* ok : {"{}", R"({"x":1})", R"({"a":[1,{"b":null}],"c":"d"})"})
    EXPECT_TRUE(FullMatch(any, ok)) << ok;
  EXPECT_FALSE(FullMatch(any, "[]"));
  auto counted = Schema(R"({"type": "object", "minProperties": 1, "maxProperties": 2})");
  ASSERT_NE(counted, nullptr);
  for (const char* ok : {R"({"x":1})", R"({"x":1,"y":"z"})"}) EXPECT_TRUE(FullMatch(counted, ok));
  for (const char* bad : {"{}", R"({"x":1,"y":2,"z":3})"}) EXPECT_FALSE(FullMatch(counted, bad));
  auto at_least = Schema(R"({"minProperties": 2})");
  ASSERT_NE(at_least, nullptr);
  EXPECT_FALSE(FullMatch(at_least, R"({"x":1})"));
  EXPECT_TRUE(FullMatch(at_least, R"({"x":1,"y":2,"z":3,"w":4})"));
  EXPECT_TRUE(FullMatch(at_least, "7"));  // not an object: minProperties does not apply
  auto empty = Schema(R"({"type": "object", "maxProperties": 0})");
  EXPECT_TRUE(FullMatch(empty, "{}"));
  EXPECT_FALSE(FullMatch(empty, R"({"x":1})"));
  auto named = Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_TRUE(FullMatch(named, R"({"a":1})"));
  EXPECT_FALSE(FullMatch(named, R"({"a":1,"x":2})"));
  const auto bad =
      JsonSchemaToEbnf(R"({"type": "object", "minProperties": 3, "maxProperties": 2})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("matches nothing"), std::string::npos);
}

TEST(JsonSchema, IntegerMultipleOfIsARemainderAutomaton) {
  auto g = Schema(R"({"type": "integer", "multipleOf": 7})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"0", "7", "-14", "700", "9999997"}) EXPECT_TRUE(FullMatch(g, ok)) << ok;
  for (const char* bad : {"1", "-6", "701", "07", "-0", "7.0", "7.5"})
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  auto spelled = Schema(R"({"type": "integer", "multipleOf": 7})", NotStrict());
  for (const char* ok : {"7.0", "-14.00"}) EXPECT_TRUE(FullMatch(spelled, ok)) << ok;
  for (const char* bad : {"7.5", "7.", "8.0"}) EXPECT_FALSE(FullMatch(spelled, bad)) << bad;
  auto n = Schema(R"({"type": "number", "multipleOf": 250})");
  EXPECT_TRUE(FullMatch(n, "1000"));
  EXPECT_FALSE(FullMatch(n, "1001"));
}

// dependentSchemas (and draft 4-7 schema-valued dependencies): the object's branch is chosen by
// which trigger properties it has; a false dependency forbids its trigger.
TEST(JsonSchema, DependentSchemasApplyWhenTheirPropertyIsPresent) {
  auto g = Schema(R"({"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "dependentSchemas": {"a": {"properties": {"b": {"minimum": 3}}, "required": ["b"]}}})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {R"({"b":1})", R"({"a":1,"b":5})", "{}"}) {
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  }
  for (const char* bad : {R"({"a":1,"b":1})", R"({"a":1})", R"({"b":"x"})"}) {
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  }
  auto boolean = Schema(R"({"properties": {"foo": {}, "bar": {}},
      "dependentSchemas": {"foo": true, "bar": false}})");
  ASSERT_NE(boolean, nullptr);
  EXPECT_TRUE(FullMatch(boolean, R"({"foo":1})"));
  EXPECT_TRUE(FullMatch(boolean, "{}"));
  EXPECT_TRUE(FullMatch(boolean, "12"));  // not an object: nothing to depend on
  EXPECT_FALSE(FullMatch(boolean, R"({"bar":2})"));
  EXPECT_FALSE(FullMatch(boolean, R"({"foo":1,"bar":2})"));
  auto draft7 = Schema(R"({"properties": {"a": {}, "b": {"type": "string"}, "c": {}},
      "dependencies": {"a": {"properties": {"b": {"maxLength": 1}}}, "c": ["b"]}})");
  ASSERT_NE(draft7, nullptr);
  EXPECT_TRUE(FullMatch(draft7, R"({"b":"xyz"})"));
  EXPECT_TRUE(FullMatch(draft7, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(FullMatch(draft7, R"({"a":1,"b":"xy"})"));
  EXPECT_FALSE(FullMatch(draft7, R"({"c":1})"));  // the array form still requires b
  EXPECT_TRUE(FullMatch(draft7, R"({"b":"xy","c":1})"));
}

// A decimal multipleOf p / 10^d: the same automaton over the digits of x * 10^d, checked against
// exact rational arithmetic on every number of up to 3 integer and 4 fraction digits.
TEST(JsonSchema, DecimalMultipleOfIsExact) {
  struct Case {
    const char* schema;
    int64_t p, scale;  // multiples of p / scale
    bool integer;
  };
  const std::vector<Case> cases = {
      {R"({"type": "number", "multipleOf": 1.5})", 15, 10, false},
      {R"({"type": "number", "multipleOf": 0.01})", 1, 100, false},
      {R"({"type": "number", "multipleOf": 0.75})", 75, 100, false},
      {R"({"type": "number", "multipleOf": 2.5e-2})", 25, 1000, false},
      {R"({"type": "number", "multipleOf": 0.007})", 7, 1000, false},
      {R"({"type": "integer", "multipleOf": 0.4})", 4, 10, true},  // integers: multiples of 2
      {R"({"type": "integer", "multipleOf": 1e-8})", 1, 100000000, true},
      {R"({"type": "integer", "multipleOf": 5.12})", 512, 100, true},  // integers: of 128
  };
  for (const Case& c : cases) {
    auto g = Schema(c.schema);
    ASSERT_NE(g, nullptr) << c.schema;
    for (int whole = 0; whole < 1000; whole += 13) {
      for (int f_digits = 0; f_digits <= (c.integer ? 0 : 4); ++f_digits) {
        int pow = 1;
        for (int i = 0; i < f_digits; ++i) pow *= 10;
        for (int frac = 0; frac < pow; frac += (pow > 100 ? 89 : 1)) {
          std::string text = std::to_string(whole);
          if (f_digits > 0) {
            std::string f = std::to_string(frac);
            text += "." + std::string(static_cast<size_t>(f_digits) - f.size(), '0') + f;
          }
          // x = (whole * pow + frac) / pow is a multiple of p / scale iff
          // (whole * pow + frac) * scale is divisible by p * pow.
          const __int128 num = (static_cast<__int128>(whole) * pow + frac) * c.scale;
          const bool multiple = num % (static_cast<__int128>(c.p) * pow) == 0;
          EXPECT_EQ(FullMatch(g, text), multiple) << c.schema << " " << text;
          if (whole > 0 || frac > 0) {
            EXPECT_EQ(FullMatch(g, "-" + text), multiple) << c.schema << " -" << text;
          }
        }
      }
    }
    EXPECT_FALSE(FullMatch(g, "-0")) << c.schema;
    EXPECT_FALSE(FullMatch(g, "1.")) << c.schema;
    EXPECT_FALSE(FullMatch(g, "01")) << c.schema;
  }
}

TEST(JsonSchema, ContainsCountsTheMatchingElements) {
  auto one =
      Schema(R"({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5}})");
  ASSERT_NE(one, nullptr);
  for (const char* ok : {"[5]", "[1,7]", "[9,2,3]", "[1,2,6,8]"})
    EXPECT_TRUE(FullMatch(one, ok)) << ok;
  for (const char* bad : {"[]", "[1,2,4]", "[5,\"x\"]"}) EXPECT_FALSE(FullMatch(one, bad)) << bad;
  auto two = Schema(R"({"contains": {"const": 1}, "minContains": 2})");
  ASSERT_NE(two, nullptr);
  for (const char* ok : {"[1,1]", "[1,2,1]", "[3,1,\"a\",1,1]", "\"not an array\""})
    EXPECT_TRUE(FullMatch(two, ok)) << ok;
  for (const char* bad : {"[1]", "[1,2]", "[]"}) EXPECT_FALSE(FullMatch(two, bad)) << bad;
  // maxContains: the other elements are the complement of contains (not {const: 1}).
  auto at_most = Schema(R"({"contains": {"const": 1}, "minContains": 0, "maxContains": 1})");
  ASSERT_NE(at_most, nullptr);
  for (const char* ok : {"[]", "[2,3]", "[1]", "[2,1,3]", "[10,-1,1.5]"})
    EXPECT_TRUE(FullMatch(at_most, ok)) << ok;
  for (const char* bad : {"[1,1]", "[1,2,1]"}) EXPECT_FALSE(FullMatch(at_most, bad)) << bad;
  auto between = Schema(R"({"type": "array", "contains": true, "minContains": 2,
      "maxContains": 3})");
  ASSERT_NE(between, nullptr);
  EXPECT_TRUE(FullMatch(between, "[1,2,3]"));
  EXPECT_FALSE(FullMatch(between, "[1]"));
  EXPECT_FALSE(FullMatch(between, "[1,2,3,4]"));
  // Vacuous forms compile as plain arrays; impossible ones and unsupported mixes are errors.
  EXPECT_TRUE(FullMatch(Schema(R"({"contains": {"const": 1}, "minContains": 0})"), "[2]"));
  EXPECT_TRUE(FullMatch(Schema(R"({"maxContains": 1})"), "[1,2]"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"contains": {"const": 1}, "minContains": 3,
      "maxContains": 1})")
                   .ok());
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "array", "contains": false})").ok());
  // Without a type, `contains: false` rules out arrays only.
  auto no_arrays = Schema(R"({"contains": false})");
  ASSERT_NE(no_arrays, nullptr);
  for (const char* ok : {"\"text\"", "3", "{}", "null"})
    EXPECT_TRUE(FullMatch(no_arrays, ok)) << ok;
  for (const char* bad : {"[]", "[1]"}) EXPECT_FALSE(FullMatch(no_arrays, bad)) << bad;
  EXPECT_TRUE(FullMatch(Schema(R"({"contains": false, "minContains": 0})"), "[1]"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"contains": {"const": 1}, "maxItems": 4})").ok());
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"contains": {"pattern": "a"}, "maxContains": 1})").ok());
}

TEST(JsonSchema, UniqueItemsOverAFiniteDomainNeverRepeatsAValue) {
  auto colors = Schema(R"({"type": "array", "items": {"enum": ["red", "green", "blue"]},
      "uniqueItems": true, "minItems": 1})");
  ASSERT_NE(colors, nullptr);
  for (const char* ok : {R"(["red"])", R"(["blue","red"])", R"(["green","blue","red"])"})
    EXPECT_TRUE(FullMatch(colors, ok)) << ok;
  for (const char* bad : {"[]", R"(["red","red"])", R"(["red","green","red"])",
                          R"(["red","green","blue","red"])", R"(["pink"])"})
    EXPECT_FALSE(FullMatch(colors, bad)) << bad;
  // An enum behind a $ref (pydantic's Set[SomeEnum]); booleans without a type beside them.
  auto ref = Schema(R"({"$defs": {"C": {"enum": ["a", "b"]}}, "type": "array",
      "items": {"$ref": "#/$defs/C"}, "uniqueItems": true})");
  ASSERT_NE(ref, nullptr);
  for (const char* ok : {"[]", R"(["a","b"])", R"(["b"])"}) EXPECT_TRUE(FullMatch(ref, ok)) << ok;
  EXPECT_FALSE(FullMatch(ref, R"(["b","b"])"));
  auto flags = Schema(R"({"items": {"type": "boolean"}, "uniqueItems": true})");
  ASSERT_NE(flags, nullptr);
  for (const char* ok : {"[true,false]", "[false]", "\"not an array\""})
    EXPECT_TRUE(FullMatch(flags, ok)) << ok;
  EXPECT_FALSE(FullMatch(flags, "[true,true]"));
  // A bounded integer range with maxItems; equal numbers (1 and 1.0) are one value.
  auto ints = Schema(R"({"type": "array", "items": {"type": "integer", "minimum": 1,
      "maximum": 3}, "uniqueItems": true, "maxItems": 2})");
  ASSERT_NE(ints, nullptr);
  for (const char* ok : {"[1,3]", "[2]", "[]"}) EXPECT_TRUE(FullMatch(ints, ok)) << ok;
  for (const char* bad : {"[1,1]", "[1,2,3]", "[0]", "[4]"})
    EXPECT_FALSE(FullMatch(ints, bad)) << bad;
  auto same = Schema(R"({"type": "array", "items": {"enum": [1, 1.0, 2]}, "uniqueItems": true})");
  ASSERT_NE(same, nullptr);
  EXPECT_TRUE(FullMatch(same, "[2,1]"));
  EXPECT_FALSE(FullMatch(same, "[1,1]"));
  EXPECT_FALSE(FullMatch(same, "[1.0,1]"));
  // allOf: uniqueItems on one side, the items on the other.
  auto merged = Schema(R"({"allOf": [{"type": "array", "items": {"enum": [1, 2]}},
      {"uniqueItems": true}]})");
  ASSERT_NE(merged, nullptr);
  EXPECT_TRUE(FullMatch(merged, "[1,2]"));
  EXPECT_FALSE(FullMatch(merged, "[2,2]"));
}

TEST(JsonSchema, UniqueItemsDomainsAndStateCounts) {
  using json = Json;
  EXPECT_EQ(SubsetsUpTo(4, 2), 1 + 4 + 6);
  EXPECT_EQ(SubsetsUpTo(3, 9), 8);
  EXPECT_EQ(SubsetsUpTo(12, 12), 4096);
  EXPECT_EQ(SubsetsUpTo(13, 13), kMaxUniqueStates + 1);
  EXPECT_EQ(SubsetsUpTo(64, 2), 1 + 64 + 2016);
  EXPECT_EQ(FiniteValues(json::parse(R"({"enum": ["b", "a", "b", 1, 1.0]})")),
            (std::vector<json>{"b", "a", 1}));
  // The enum filtered by the type and bounds beside it; exclusive integer bounds.
  EXPECT_EQ(FiniteValues(json::parse(R"({"type": "integer", "enum": [0, 2, 2.5, "x", 9],
      "maximum": 5})")),
            (std::vector<json>{0, 2}));
  EXPECT_EQ(FiniteValues(json::parse(R"({"type": "integer", "exclusiveMinimum": 0.5,
      "exclusiveMaximum": 3})")),
            (std::vector<json>{1, 2}));
  EXPECT_EQ(FiniteValues(json::parse(R"({"type": ["null", "boolean"], "title": "t"})")),
            (std::vector<json>{nullptr, false, true}));
  for (const char* open : {R"({"type": "string"})", R"({"type": "integer", "minimum": 0})",
                           R"({"enum": ["a"], "pattern": "a"})", R"({})",
                           R"({"type": "integer", "minimum": 0, "maximum": 64})"}) {
    EXPECT_FALSE(FiniteValues(json::parse(open)).has_value()) << open;
  }
}

TEST(JsonSchema, UnevaluatedKeywordsSeeWhatTheSchemaAndItsAllOfEvaluate) {
  auto plain = Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}},
      "unevaluatedProperties": false})");
  ASSERT_NE(plain, nullptr);
  for (const char* ok : {"{}", R"({"a":1})"}) EXPECT_TRUE(FullMatch(plain, ok)) << ok;
  EXPECT_FALSE(FullMatch(plain, R"({"a":1,"b":2})"));
  // Properties of an allOf subschema and of the chosen anyOf branch are evaluated.
  auto through = Schema(R"({"allOf": [{"properties": {"a": {"const": 1}}}],
      "properties": {"b": {"const": 2}}, "required": ["a", "b"], "unevaluatedProperties": false})");
  ASSERT_NE(through, nullptr);
  EXPECT_TRUE(FullMatch(through, R"({"b":2,"a":1})") || FullMatch(through, R"({"a":1,"b":2})"));
  auto branches = Schema(R"({"anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
      {"properties": {"b": {"const": 2}}, "required": ["b"]}], "unevaluatedProperties": false})");
  ASSERT_NE(branches, nullptr);
  // Every passing branch evaluates: with both passing, both properties are evaluated.
  for (const char* ok : {R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"}) {
    EXPECT_TRUE(FullMatch(branches, ok)) << ok;
  }
  // b=3 fails the second branch, so nothing evaluates b; a=2 likewise.
  for (const char* bad : {R"({"a":1,"b":3})", R"({"a":2,"b":2})", R"({"a":1,"c":2})"}) {
    EXPECT_FALSE(FullMatch(branches, bad)) << bad;
  }
  // A lone `if` constrains nothing, but what it evaluates when it passes is evaluated.
  auto lone_if = Schema(R"({"if": {"properties": {"foo": {"type": "string"}}},
      "unevaluatedProperties": false})");
  ASSERT_NE(lone_if, nullptr);
  for (const char* ok : {"{}", R"({"foo":"a"})"}) EXPECT_TRUE(FullMatch(lone_if, ok)) << ok;
  for (const char* bad : {R"({"foo":1})", R"({"bar":"a"})"}) {
    EXPECT_FALSE(FullMatch(lone_if, bad)) << bad;
  }
  // Inside an allOf subschema it sees that subschema only: a property beside it is unevaluated
  // there, so requiring one is unsatisfiable.
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"allOf": [{"properties": {"a": {"const": 1}},
      "unevaluatedProperties": false}], "properties": {"b": {"const": 2}}, "required": ["b"]})")
                   .ok());
  // A schema: the properties nothing else evaluates must meet it.
  auto extra = Schema(R"({"type": "object", "properties": {"a": {"const": 1}}, "required": ["x"],
      "unevaluatedProperties": {"type": "boolean"}})");
  ASSERT_NE(extra, nullptr);
  EXPECT_TRUE(FullMatch(extra, R"({"x":true})"));
  EXPECT_FALSE(FullMatch(extra, R"({"x":1})"));
  // unevaluatedItems: the items after prefixItems; nothing beside a schema-valued items.
  auto tuple = Schema(R"({"prefixItems": [{"const": 1}], "unevaluatedItems": false})");
  ASSERT_NE(tuple, nullptr);
  for (const char* ok : {"[]", "[1]", "\"x\""}) EXPECT_TRUE(FullMatch(tuple, ok)) << ok;
  EXPECT_FALSE(FullMatch(tuple, "[1,2]"));
  auto all = Schema(R"({"items": {"type": "integer"}, "unevaluatedItems": false})");
  ASSERT_NE(all, nullptr);
  EXPECT_TRUE(FullMatch(all, "[1,2,3]"));
  auto none = Schema(R"({"type": "array", "unevaluatedItems": false})");
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(FullMatch(none, "[]"));
  EXPECT_FALSE(FullMatch(none, "[1]"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"contains": {"const": 1}, "unevaluatedItems": false})").ok());
}

TEST(JsonSchema, NotOfConstAndEnumScalars) {
  auto g = Schema(R"({"not": {"enum": [1, "a", true, null]}})");
  ASSERT_NE(g, nullptr);
  for (const char* ok :
       {"0", "2", "-1", "10", "1.5", R"("b")", R"("aa")", R"("")", "false", "{}", "[1]"})
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  for (const char* bad : {"1", "1.0", "1e0", R"("a")", "true", "null"})
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  auto non_empty = Schema(R"({"type": "string", "not": {"const": ""}})");
  ASSERT_NE(non_empty, nullptr);
  EXPECT_TRUE(FullMatch(non_empty, R"("x")"));
  EXPECT_FALSE(FullMatch(non_empty, R"("")"));
  EXPECT_FALSE(FullMatch(non_empty, "1"));
  auto not_zero = Schema(R"({"type": "integer", "not": {"const": 0}})");
  EXPECT_TRUE(FullMatch(not_zero, "-7"));
  EXPECT_FALSE(FullMatch(not_zero, "0"));
  EXPECT_FALSE(FullMatch(not_zero, "0.5"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"not": {"const": 1.5}})").ok());
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"not": {"const": {"a": 1}}})").ok());
  // allOf of two integer multipleOf: their least common multiple.
  auto lcm = Schema(R"({"allOf": [{"type": "integer", "multipleOf": 4}, {"multipleOf": 6}]})");
  ASSERT_NE(lcm, nullptr);
  for (const char* ok : {"0", "12", "24", "-36"}) EXPECT_TRUE(FullMatch(lcm, ok)) << ok;
  for (const char* bad : {"4", "6", "8", "18"}) EXPECT_FALSE(FullMatch(lcm, bad)) << bad;
}

TEST(JsonSchema, IfThenElseBranchesOnANegatableCondition) {
  auto g = Schema(R"({"if": {"exclusiveMaximum": 0}, "then": {"minimum": -10},
      "else": {"maximum": 100}})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"-1", "-10", "-9.5", "0", "4", "100", "\"x\"", "null"})
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  for (const char* bad : {"-11", "-100", "101", "250.5"}) EXPECT_FALSE(FullMatch(g, bad)) << bad;
  auto words = Schema(R"({"type": "string", "if": {"maxLength": 4},
      "then": {"const": "yes"}, "else": {"minLength": 6}})");
  ASSERT_NE(words, nullptr);
  for (const char* ok : {"\"yes\"", "\"longer\""}) EXPECT_TRUE(FullMatch(words, ok)) << ok;
  for (const char* bad : {"\"no\"", "\"fiver\"", "1"}) EXPECT_FALSE(FullMatch(words, bad)) << bad;
  // if true / if false pick a branch; if alone constrains nothing.
  EXPECT_TRUE(
      FullMatch(Schema(R"({"if": true, "then": {"const": 1}, "else": {"const": 2}})"), "1"));
  EXPECT_FALSE(
      FullMatch(Schema(R"({"if": false, "then": {"const": 1}, "else": {"const": 2}})"), "1"));
  EXPECT_TRUE(FullMatch(Schema(R"({"if": {"const": 0}})"), "\"anything\""));
  // not of bounds beside other keywords: the complement merged with them.
  auto not_small = Schema(R"({"type": "integer", "not": {"maximum": 9}})");
  ASSERT_NE(not_small, nullptr);
  EXPECT_TRUE(FullMatch(not_small, "10"));
  EXPECT_FALSE(FullMatch(not_small, "9"));
  EXPECT_FALSE(FullMatch(not_small, "\"x\""));
}

TEST(JsonSchema, DependentRequiredHoldsOverTheWrittenProperties) {
  auto g = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
      "dependentRequired": {"c": ["a"], "a": ["b"]}})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"{}", R"({"b":1})", R"({"a":1,"b":2})", R"({"a":1,"b":2,"c":3})"})
    EXPECT_TRUE(FullMatch(g, ok)) << ok;
  for (const char* bad : {R"({"a":1})", R"({"c":1})", R"({"b":1,"c":1})", R"({"a":1,"c":3})"})
    EXPECT_FALSE(FullMatch(g, bad)) << bad;
  // A trigger that is not listed is never written as an additional key; draft 4-7 dependencies.
  auto extra = Schema(R"({"properties": {"a": {}}, "additionalProperties": true,
      "dependencies": {"x": ["y"]}})");
  ASSERT_NE(extra, nullptr);
  EXPECT_TRUE(FullMatch(extra, R"({"a":1,"z":2})"));
  EXPECT_FALSE(FullMatch(extra, R"({"x":1})"));
  auto counted = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}},
      "dependentRequired": {"a": ["b"]}, "maxProperties": 1})");
  ASSERT_NE(counted, nullptr);
  EXPECT_TRUE(FullMatch(counted, R"({"b":1})"));
  EXPECT_FALSE(FullMatch(counted, R"({"a":1})"));
  EXPECT_FALSE(FullMatch(counted, R"({"a":1,"b":1})"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {}},
      "dependentRequired": {"a": ["b"]}})")
                   .ok());  // b is not listed
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {}}, "required": ["a"],
      "dependentRequired": {"a": ["b"]}, "additionalProperties": false})")
                   .ok());
  // Schema-valued dependencies are dependentSchemas (their own test): a present "a" needs "b".
  auto schema_valued = Schema(R"({"dependencies": {"a": {"required": ["b"]}}})");
  ASSERT_NE(schema_valued, nullptr);
  EXPECT_TRUE(FullMatch(schema_valued, R"({"a":1,"b":2})"));
  EXPECT_FALSE(FullMatch(schema_valued, R"({"a":1})"));
}

TEST(JsonSchema, PatternPropertiesApplyToTheListedAndRequiredNames) {
  auto g = Schema(R"({"type": "object", "properties": {"x-id": {"type": "integer"},
      "name": {"type": "string"}, "x-off": {}}, "required": ["x-id", "x-extra"],
      "patternProperties": {"^x-": {"minimum": 10}, "off$": false},
      "additionalProperties": false})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"x-id":10,"name":"a","x-extra":12.5})"));
  EXPECT_TRUE(FullMatch(g, R"({"x-id":99,"x-extra":10})"));
  EXPECT_FALSE(FullMatch(g, R"({"x-id":9,"x-extra":10})"));  // both schemas apply to x-id
  EXPECT_FALSE(FullMatch(g, R"({"x-id":10,"x-extra":9})"));  // x-extra: the pattern's schema
  EXPECT_FALSE(FullMatch(g, R"({"x-id":10,"x-off":1,"x-extra":10})"));  // off$ is false
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"patternProperties": {"^a": {}}, "required": ["ab"],
      "properties": {}, "patternProperties": {"b$": false}})")
                   .ok());
}

TEST(JsonSchema, PropertyNamesDecideWhichListedNamesAreWritten) {
  auto g = Schema(R"({"type": "object", "properties": {"ab": {}, "abcdef": {}, "Xy": {}},
      "propertyNames": {"maxLength": 4, "pattern": "^[a-z]+$"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"ab":1})"));
  EXPECT_TRUE(FullMatch(g, "{}"));
  EXPECT_FALSE(FullMatch(g, R"({"ab":1,"abcdef":2})"));  // too long
  EXPECT_FALSE(FullMatch(g, R"({"Xy":1})"));             // pattern
  auto none = Schema(R"({"type": "object", "properties": {"a": {}}, "propertyNames": false})");
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(FullMatch(none, "{}"));
  EXPECT_FALSE(FullMatch(none, R"({"a":1})"));
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {}}, "required": ["a"],
      "propertyNames": {"const": "b"}})")
                   .ok());
  // Extra keys beside listed names are refused; with none listed they are propertyNames' strings.
  EXPECT_FALSE(JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {}},
      "additionalProperties": true, "propertyNames": {"maxLength": 3}})")
                   .ok());
  auto short_keys = Schema(R"({"type": "object", "additionalProperties": true,
      "propertyNames": {"maxLength": 3}})");
  EXPECT_TRUE(FullMatch(short_keys, R"({"abc":1})"));
  EXPECT_FALSE(FullMatch(short_keys, R"({"abcd":1})"));
  EXPECT_FALSE(
      JsonSchemaToEbnf(R"({"properties": {"a": {}}, "propertyNames": {"format": "email"}})").ok());
}

TEST(JsonSchema, JsonObjectModeAcceptsAnyObjectOnly) {
  GrammarCompiler compiler(ByteVocabulary());
  auto g = compiler.CompileJsonObject();
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(FullMatch(*g, R"({"a":[1,{"b":null}],"c":"\u00e9x","d":-1.5e+3})"));
  EXPECT_TRUE(FullMatch(*g, "{}"));
  EXPECT_FALSE(FullMatch(*g, "[]"));
  EXPECT_FALSE(FullMatch(*g, R"({"a":01})"));
}

// Not strict, JSON Schema compares numbers by value: 1.0 is an integer, and equals const 1.
// Strict, an integer has no fraction (typed consumers refuse 1.0).
TEST(JsonSchema, IntegersMayBeWrittenWithAZeroFractionWhenNotStrict) {
  EXPECT_FALSE(FullMatch(Schema(R"({"type": "integer"})"), "1.0"));
  auto any = Schema(R"({"type": "integer"})", NotStrict());
  for (const char* ok : {"1", "1.0", "-3.000", "0.0"}) EXPECT_TRUE(FullMatch(any, ok)) << ok;
  for (const char* bad : {"1.5", "1.", "1.01", "1e0"}) EXPECT_FALSE(FullMatch(any, bad)) << bad;
  auto bounded = Schema(R"({"type": "integer", "minimum": 2, "maximum": 5})", NotStrict());
  EXPECT_TRUE(FullMatch(bounded, "2.0"));
  EXPECT_FALSE(FullMatch(bounded, "1.0"));
  EXPECT_FALSE(FullMatch(bounded, "6.0"));
}

// Not strict, const / enum accept every value equal to theirs: numbers in any spelling without
// an exponent, object keys in any order (element by element, recursively). Strict: as written.
TEST(JsonSchema, ConstAndEnumAcceptEveryEqualValueWhenNotStrict) {
  EXPECT_FALSE(FullMatch(Schema(R"({"const": 1})"), "1.0"));
  EXPECT_FALSE(FullMatch(Schema(R"({"const": {"a": 1, "b": 2}})"), R"({"b":2,"a":1})"));
  const JsonSchemaOptions open = NotStrict();
  auto one = Schema(R"({"const": 1})", open);
  for (const char* ok : {"1", "1.0", "1.00"}) EXPECT_TRUE(FullMatch(one, ok)) << ok;
  for (const char* bad : {"true", "1.5", "10", "\"1\""}) EXPECT_FALSE(FullMatch(one, bad)) << bad;
  auto minus_two = Schema(R"({"const": -2.0})", open);
  EXPECT_TRUE(FullMatch(minus_two, "-2"));
  EXPECT_TRUE(FullMatch(minus_two, "-2.0"));
  auto fraction = Schema(R"({"enum": [1.5, "x"]})", open);
  EXPECT_TRUE(FullMatch(fraction, "1.50"));
  EXPECT_FALSE(FullMatch(fraction, "1.05"));
  auto object = Schema(R"({"const": {"a": 1, "b": [0, {"c": null, "d": true}]}})", open);
  EXPECT_TRUE(FullMatch(object, R"({"a":1,"b":[0,{"c":null,"d":true}]})"));
  EXPECT_TRUE(FullMatch(object, R"({"b":[0.0,{"d":true,"c":null}],"a":1.0})"));
  EXPECT_FALSE(FullMatch(object, R"({"a":1})"));                                    // b missing
  EXPECT_FALSE(FullMatch(object, R"({"a":1,"a":1,"b":[0,{"c":null,"d":true}]})"));  // twice
  EXPECT_FALSE(FullMatch(object, R"({"b":[{"c":null,"d":true},0],"a":1})"));        // array order
  // Integer-typed enum members written as 1.0 count as integers (strict: written as 1).
  auto typed = Schema(R"({"type": "integer", "enum": [1.0, 2.5]})", open);
  EXPECT_TRUE(FullMatch(typed, "1"));
  auto typed_strict = Schema(R"({"type": "integer", "enum": [1.0, 2.5]})");
  EXPECT_TRUE(FullMatch(typed_strict, "1"));
  EXPECT_FALSE(FullMatch(typed_strict, "1.0"));
  EXPECT_FALSE(FullMatch(typed_strict, "2.5"));
  EXPECT_FALSE(FullMatch(typed, "2.5"));
}

// --json-schema-strict off: an absent additionalProperties allows any other key, as the
// specification says; names a dependency mentions may appear and are then checked.
TEST(JsonSchema, NotStrictAllowsKeysTheSchemaDoesNotList) {
  const std::string named = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  auto strict = Schema(named);
  auto open = Schema(named, NotStrict());
  EXPECT_FALSE(FullMatch(strict, R"({"a":1,"x":[true]})"));
  EXPECT_TRUE(FullMatch(open, R"({"a":1,"x":[true]})"));
  EXPECT_TRUE(FullMatch(open, R"({"x":"y"})"));
  EXPECT_FALSE(FullMatch(open, R"({"a":"s"})"));
  EXPECT_FALSE(FullMatch(open, R"({"a":1,"a":2})"));  // a listed key is never an extra one
  auto closed = Schema(R"({"properties": {"a": {}}, "additionalProperties": false})", NotStrict());
  EXPECT_FALSE(FullMatch(closed, R"({"a":1,"x":2})"));
  auto deps = Schema(R"({"dependentRequired": {"bar": ["foo"]}})", NotStrict());
  EXPECT_TRUE(FullMatch(deps, R"({"foo":1,"bar":2})"));
  EXPECT_TRUE(FullMatch(deps, R"({"foo":1,"x":2})"));
  EXPECT_FALSE(FullMatch(deps, R"({"bar":2})"));  // bar needs foo
  // Branches that exclude each other only because no extra key is written overlap here.
  const std::string one_of = R"({"oneOf": [{"properties": {"a": {}}, "required": ["a"]},
      {"properties": {"b": {}}, "required": ["b"]}]})";
  EXPECT_NE(Schema(one_of), nullptr);
  auto e = JsonSchemaToEbnf(one_of, NotStrict());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("overlapping"), std::string::npos) << e.status().message();
}

// Where no other extra key is written, a key matching the one pattern of patternProperties is,
// with the pattern's schema; not when a listed name matches the pattern too (it would need both
// schemas) or with several patterns.
TEST(JsonSchema, PatternPropertiesWriteKeysMatchingThePattern) {
  auto g = Schema(R"({"properties": {"foo": {}}, "patternProperties": {"^v": {"type": "integer"}},
      "additionalProperties": false})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"foo":1,"vroom":2})"));
  EXPECT_TRUE(FullMatch(g, R"({"v":2,"vx":3})"));
  EXPECT_FALSE(FullMatch(g, R"({"vroom":"x"})"));
  EXPECT_FALSE(FullMatch(g, R"({"bar":1})"));
  auto clash = Schema(R"({"properties": {"fa": {"minimum": 5}},
      "patternProperties": {"^f": {"type": "integer"}}, "additionalProperties": false})");
  ASSERT_NE(clash, nullptr);
  EXPECT_TRUE(FullMatch(clash, R"({"fa":7})"));
  EXPECT_FALSE(FullMatch(clash, R"({"fa":7.5})"));  // fa takes both schemas
  EXPECT_FALSE(FullMatch(clash, R"({"fb":1})"));    // not written: "fa" matches the pattern too
}

// An `if` of scalar const / enum values: its complement is `not` of them; a false then / else
// leaves its branch out.
TEST(JsonSchema, IfOfScalarValuesAndFalseBranches) {
  auto not_one = Schema(R"({"if": {"const": 1}, "then": false})");
  ASSERT_NE(not_one, nullptr);
  for (const char* ok : {"2", "\"a\"", "[1]"}) EXPECT_TRUE(FullMatch(not_one, ok)) << ok;
  for (const char* bad : {"1", "1.0"}) EXPECT_FALSE(FullMatch(not_one, bad)) << bad;
  auto only = Schema(R"({"if": {"enum": ["a", "b"]}, "else": false})");
  ASSERT_NE(only, nullptr);
  EXPECT_TRUE(FullMatch(only, "\"b\""));
  EXPECT_FALSE(FullMatch(only, "\"c\""));
  const auto both = JsonSchemaToEbnf(R"({"if": {"minimum": 3}, "then": false, "else": false})");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("nothing matches"), std::string::npos);
}

// `then` / `else` without `if`, and `if` alone, constrain nothing: in separate allOf
// subschemas they do not pair up.
TEST(JsonSchema, LoneConditionalsInAllOfDoNotInteract) {
  auto g = Schema(R"({"allOf": [{"if": {"exclusiveMaximum": 0}}, {"then": {"minimum": -10}},
      {"else": {"multipleOf": 2}}]})");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"-100", "3", "-1"}) EXPECT_TRUE(FullMatch(g, ok)) << ok;
}

// oneOf with a branch that accepts everything: beside one other branch B, the values B rejects;
// beside another such branch, nothing.
TEST(JsonSchema, OneOfWithABranchThatAcceptsEverything) {
  auto g = Schema(R"({"oneOf": [{"type": "number"}, {}]})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, "\"x\""));
  EXPECT_TRUE(FullMatch(g, "null"));
  EXPECT_FALSE(FullMatch(g, "1"));
  EXPECT_FALSE(FullMatch(g, "1.5"));
  for (const char* schema : {R"({"oneOf": [true, {}]})", R"({"oneOf": [true, true, false]})"}) {
    const auto e = JsonSchemaToEbnf(schema);
    ASSERT_FALSE(e.ok()) << schema;
    EXPECT_NE(e.status().message().find("nothing matches"), std::string::npos) << schema;
  }
}

// multipleOf beside a minimum or maximum of 0 alone keeps the multiples of that sign; other
// bounds beside it are refused.
TEST(JsonSchema, MultipleOfWithASignBound) {
  auto non_negative = Schema(R"({"type": "integer", "minimum": 0, "multipleOf": 3})");
  for (const char* ok : {"0", "3", "36"}) EXPECT_TRUE(FullMatch(non_negative, ok)) << ok;
  for (const char* bad : {"-3", "4"}) EXPECT_FALSE(FullMatch(non_negative, bad)) << bad;
  auto non_positive = Schema(R"({"type": "number", "maximum": 0, "multipleOf": 0.5})");
  for (const char* ok : {"0", "-0.5", "-3"}) EXPECT_TRUE(FullMatch(non_positive, ok)) << ok;
  for (const char* bad : {"0.5", "-0.25", "1"}) EXPECT_FALSE(FullMatch(non_positive, bad)) << bad;
  const auto bounded = JsonSchemaToEbnf(R"({"type": "integer", "minimum": 1, "multipleOf": 3})");
  ASSERT_FALSE(bounded.ok());
  EXPECT_NE(bounded.status().message().find("multipleOf"), std::string::npos);
  // Multiples of a whole m are whole numbers: 4.0 when not strict.
  auto whole = Schema(R"({"type": "number", "multipleOf": 2})", NotStrict());
  EXPECT_TRUE(FullMatch(whole, "4.0"));
  EXPECT_FALSE(FullMatch(whole, "3.0"));
}

// allOf: one side's additionalProperties false keeps out a property only the other side lists
// (an error only when that property is required); a dependentSchemas branch that cannot hold
// its trigger is left out.
TEST(JsonSchema, AdditionalPropertiesFalseKeepsOutTheOtherSidesProperties) {
  auto g = Schema(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false},
      {"properties": {"b": {}}}]})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(FullMatch(g, R"({"a":1})"));
  EXPECT_FALSE(FullMatch(g, R"({"a":1,"b":2})"));
  const auto required = JsonSchemaToEbnf(R"({"allOf": [{"additionalProperties": false},
      {"properties": {"b": {}}, "required": ["b"]}]})");
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.status().message().find("matches nothing"), std::string::npos);
  auto dependent = Schema(R"({"properties": {"foo": {}}, "dependentSchemas": {"foo":
      {"properties": {"bar": {}}, "additionalProperties": false}}})");
  ASSERT_NE(dependent, nullptr);
  EXPECT_TRUE(FullMatch(dependent, R"({})"));
  EXPECT_FALSE(FullMatch(dependent, R"({"foo":1})"));
}

// Not strict, objects of a few properties take them in any order, with dependencies and counts
// checked over the set written; extra keys meet propertyNames where no name is listed.
TEST(JsonSchema, NotStrictObjectsInAnyOrderWithDependenciesAndCounts) {
  const JsonSchemaOptions open = NotStrict();
  auto deps = Schema(R"({"properties": {"a": {}, "b": {}, "c": {}}, "dependentRequired":
      {"c": ["a"]}, "additionalProperties": false, "maxProperties": 2})",
                     open);
  ASSERT_NE(deps, nullptr);
  for (const char* ok : {R"({"c":1,"a":2})", R"({"b":1,"a":2})", R"({})"}) {
    EXPECT_TRUE(FullMatch(deps, ok)) << ok;
  }
  for (const char* bad : {R"({"c":1,"b":2})", R"({"a":1,"b":2,"c":3})", R"({"c":1})"}) {
    EXPECT_FALSE(FullMatch(deps, bad)) << bad;
  }
  auto names = Schema(R"({"propertyNames": {"maxLength": 3}, "additionalProperties":
      {"type": "number"}})",
                      open);
  ASSERT_NE(names, nullptr);
  EXPECT_TRUE(FullMatch(names, R"({"abc":1,"x":2})"));
  EXPECT_FALSE(FullMatch(names, R"({"abcd":1})"));
  EXPECT_FALSE(FullMatch(names, R"({"a":"s"})"));
  const auto listed = JsonSchemaToEbnf(R"({"properties": {"a": {}},
      "propertyNames": {"maxLength": 3}, "additionalProperties": true})");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("propertyNames"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer::structured
