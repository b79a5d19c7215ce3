// Python json.dumps / repr(float) conventions, with expected strings taken from CPython 3.11.
#include "tokenizer/chat/python_json.h"

#include <gtest/gtest.h>

namespace deepinfer::tokenizer {
namespace {

TEST(PythonJsonTest, FloatRepr) {
  EXPECT_EQ(PyFloatRepr(0.0), "0.0");
  EXPECT_EQ(PyFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PyFloatRepr(1.5), "1.5");
  EXPECT_EQ(PyFloatRepr(2.0), "2.0");
  EXPECT_EQ(PyFloatRepr(0.1), "0.1");
  EXPECT_EQ(PyFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PyFloatRepr(0.00001), "1e-05");
  EXPECT_EQ(PyFloatRepr(1.5e-7), "1.5e-07");
  EXPECT_EQ(PyFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PyFloatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PyFloatRepr(1.25e100), "1.25e+100");
  EXPECT_EQ(PyFloatRepr(123.456), "123.456");
  EXPECT_EQ(PyFloatRepr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(PyFloatRepr(5e-324), "5e-324");
  EXPECT_EQ(PyFloatRepr(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(PythonJsonTest, DumpsKeepsOrderAndPythonSeparators) {
  const auto v = nlohmann::ordered_json::parse(
      R"({"z": 1, "a": [true, null, -2, 3.0, {"k": "v"}], "é": "x\u0001\n\u2028\"\\/", "e": {}, "f": []})");
  EXPECT_EQ(PyJsonDumps(v),
            "{\"z\": 1, \"a\": [true, null, -2, 3.0, {\"k\": \"v\"}], \"é\": "
            "\"x\\u0001\\n\u2028\\\"\\\\/\", \"e\": {}, \"f\": []}");
  EXPECT_EQ(PyJsonDumps(nlohmann::ordered_json::parse("18446744073709551615")),
            "18446744073709551615");
  EXPECT_EQ(PyJsonQuote("\x7f\x1f"), "\"\x7f\\u001f\"");
}

TEST(PythonJsonTest, Truthiness) {
  using J = nlohmann::ordered_json;
  for (const char* falsy : {"null", "false", "0", "0.0", "\"\"", "[]", "{}"}) {
    EXPECT_FALSE(PyTruthy(J::parse(falsy))) << falsy;
  }
  for (const char* truthy : {"true", "-1", "0.5", "\"0\"", "[0]", "{\"a\":null}"}) {
    EXPECT_TRUE(PyTruthy(J::parse(truthy))) << truthy;
  }
}

TEST(PythonJsonTest, MaxJsonNesting) {
  EXPECT_EQ(MaxJsonNesting("1"), 0);
  EXPECT_EQ(MaxJsonNesting(R"({"a": [[1], {"b": "[[[["}]})"), 3);
  EXPECT_EQ(MaxJsonNesting(R"(["\"[", [[]]])"), 3);
}

}  // namespace
}  // namespace deepinfer::tokenizer
