//===- JsonTest.cpp - the located JSON reader -----------------------------===//

#include "tbc/Support/Json.h"

#include <gtest/gtest.h>

using namespace tbc::json;

static std::optional<Value> parseOk(const std::string &text) {
  ParseError err;
  std::optional<Value> v = parse(text, err);
  EXPECT_TRUE(v.has_value()) << err.message;
  return v;
}

static ParseError parseFail(const std::string &text) {
  ParseError err;
  EXPECT_FALSE(parse(text, err).has_value()) << text;
  return err;
}

TEST(Json, RemembersLineAndColumnOfEveryValue) {
  auto v = parseOk("{\n  \"a\": 1,\n  \"b\": [true, null]\n}");
  ASSERT_TRUE(v && v->isObject());
  EXPECT_EQ(v->get("a")->pos().line, 2);
  EXPECT_EQ(v->get("a")->pos().column, 8);
  const Value *b = v->get("b");
  ASSERT_TRUE(b && b->isArray());
  EXPECT_EQ(b->elements()[1].pos().line, 3);
  EXPECT_EQ(b->elements()[1].pos().column, 15);
  EXPECT_TRUE(b->elements()[1].isNull());
}

TEST(Json, IntegersAndFloats) {
  auto v = parseOk("[0, -7, 1e-05, 500000.0, 9007199254740993, 1.5]");
  const auto &e = v->elements();
  EXPECT_TRUE(e[0].isInteger());
  EXPECT_EQ(e[1].asInt(), -7);
  EXPECT_FALSE(e[2].isInteger());
  EXPECT_DOUBLE_EQ(e[2].asDouble(), 1e-05);
  EXPECT_FALSE(e[3].isInteger()); // a shape of [64.0] is a mistake
  EXPECT_DOUBLE_EQ(e[3].asDouble(), 500000.0);
  EXPECT_EQ(e[4].asInt(), 9007199254740993); // exact, not through double
  EXPECT_FALSE(e[5].isInteger());
}

TEST(Json, StringEscapesAndUtf8) {
  auto v = parseOk(R"(["a\"b\\c\n", "\u00e9\ud83d\ude00", "h\u00e9"])");
  EXPECT_EQ(v->elements()[0].asString(), "a\"b\\c\n");
  EXPECT_EQ(v->elements()[1].asString(), "\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(v->elements()[2].asString(), "h\xC3\xA9");
}

TEST(Json, RejectsMalformedInputWithPosition) {
  ParseError e = parseFail("{\"a\": 1,\n \"b\" 2}");
  EXPECT_EQ(e.pos.line, 2);
  EXPECT_EQ(e.pos.column, 6);
  EXPECT_EQ(e.message, "expected ':' after key 'b'");
  EXPECT_EQ(parseFail("{\"a\": 1, \"a\": 2}").message, "duplicate key 'a'");
  EXPECT_EQ(parseFail("[1, 2").message, "expected ',' or ']' in array");
  EXPECT_EQ(parseFail("\"abc").message, "unterminated string");
  EXPECT_EQ(parseFail("[01]").message, "expected ',' or ']' in array");
  EXPECT_EQ(parseFail("[1.]").message,
            "invalid number: digits expected after '.'");
  EXPECT_EQ(parseFail("\"\xC3\"").message, "invalid UTF-8 in string");
  EXPECT_EQ(parseFail("\"\xED\xA0\x80\"").message, "invalid UTF-8 in string");
  EXPECT_EQ(parseFail("\"\\ud800\"").message,
            "unpaired surrogate in \\u escape");
  EXPECT_EQ(parseFail("{} x").message, "unexpected text after the JSON value");
  EXPECT_EQ(parseFail("").message, "unexpected end of input, expected a value");
}

TEST(Json, BoundsNestingDepth) {
  std::string deep(300, '[');
  EXPECT_EQ(parseFail(deep).message, "JSON nested deeper than 256 levels");
  std::string ok = std::string(200, '[') + std::string(200, ']');
  parseOk(ok);
}

TEST(Json, FormatNumberRoundTrips) {
  EXPECT_EQ(formatNumber(1e-05), "1e-05");
  EXPECT_EQ(formatNumber(10000.0), "1e+04");
  EXPECT_EQ(formatNumber(0.1), "0.1");
  EXPECT_EQ(formatNumber(-30.0), "-3e+01");
}

TEST(Json, NumbersMustBeFinite) {
  EXPECT_EQ(parseFail("{\"eps\": 1e999}").message,
            "number 1e999 is out of range (not a finite double)");
  EXPECT_EQ(parseFail("[-1e400]").message,
            "number -1e400 is out of range (not a finite double)");
}

TEST(Json, ReadersRefuseDocumentsPastTheirBudget) {
  tbc::json::ParseError e;
  tbc::json::Limits small{64, 5};
  EXPECT_FALSE(tbc::json::parse(std::string(65, ' '), e, small));
  EXPECT_EQ(e.message, "document of 65 bytes exceeds the reader's limit of 64 bytes");
  EXPECT_TRUE(tbc::json::parse("[1,2,3,4]", e, small));
  EXPECT_FALSE(tbc::json::parse("[1,2,3,4,5]", e, small));
  EXPECT_EQ(e.message, "document holds more than 5 values, the reader's limit");
}
