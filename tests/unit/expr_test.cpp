// Tests of the model format's expression language: values, precedence, and every error path.
#include <gtest/gtest.h>

#include "compiler/frontend/yaml/expr.h"

namespace zoc::yaml {
namespace {

ExprValue eval_ok(std::string_view text, const ExprEnv& env = {}) {
  auto v = eval_expr(text, env);
  EXPECT_TRUE(v.ok()) << text << ": " << (v.ok() ? "" : v.error().message);
  return v.ok() ? *v : ExprValue{int64_t{-999}};
}

std::string eval_err(std::string_view text, const ExprEnv& env = {}) {
  auto v = eval_expr(text, env);
  EXPECT_FALSE(v.ok()) << text << " unexpectedly gave " << (v.ok() ? v->str() : "");
  return v.ok() ? "" : v.error().message;
}

TEST(Expr, IntegersAndPrecedence) {
  EXPECT_EQ(eval_ok("1 + 2 * 3").as_int(), 7);
  EXPECT_EQ(eval_ok("(1 + 2) * 3").as_int(), 9);
  EXPECT_EQ(eval_ok("7 / 2").as_int(), 3);
  EXPECT_EQ(eval_ok("7 % 4").as_int(), 3);
  EXPECT_EQ(eval_ok("-3 + 10").as_int(), 7);
  EXPECT_EQ(eval_ok("10 - 2 - 3").as_int(), 5);  // left associative
  EXPECT_EQ(eval_ok("  42  ").as_int(), 42);
}

TEST(Expr, NamesBooleansAndTernary) {
  const ExprEnv env = {
      {"planes", ExprValue{int64_t{64}}}, {"i", ExprValue{int64_t{0}}}, {"down", ExprValue{true}}};
  EXPECT_EQ(eval_ok("planes * 4", env).as_int(), 256);
  EXPECT_TRUE(eval_ok("i == 0", env).as_bool());
  EXPECT_EQ(eval_ok("i == 0 ? 2 : 1", env).as_int(), 2);
  EXPECT_EQ(eval_ok("i != 0 ? 2 : 1", env).as_int(), 1);
  EXPECT_TRUE(eval_ok("down && planes >= 64", env).as_bool());
  EXPECT_FALSE(eval_ok("!down || planes < 64", env).as_bool());
  EXPECT_EQ(eval_ok("true ? false ? 1 : 2 : 3").as_int(), 2);  // right associative
}

TEST(Expr, Errors) {
  EXPECT_NE(eval_err("2 * ").find("expected a value"), std::string::npos);
  EXPECT_NE(eval_err("1 / 0").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_err("5 % 0").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_err("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("3037000500 * 3037000500").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("99999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(eval_err("widht").find("unknown name 'widht'"), std::string::npos);
  EXPECT_NE(eval_err("1 + true").find("needs integers"), std::string::npos);
  EXPECT_NE(eval_err("1 && 2").find("needs booleans"), std::string::npos);
  EXPECT_NE(eval_err("1 ? 2 : 3").find("must be a boolean"), std::string::npos);
  EXPECT_NE(eval_err("(1 + 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(eval_err("1 2").find("unexpected '2'"), std::string::npos);
  EXPECT_NE(eval_err("1 == true").find("one type"), std::string::npos);
  EXPECT_NE(eval_err("").find("expected a value"), std::string::npos);
}

// Strings only choose among names (`init`): literals, params, ==, != and ?:.
TEST(Expr, StringsChooseAmongNames) {
  const ExprEnv env = {{"zero", ExprValue{true}}, {"scheme", ExprValue{std::string("pytorch")}}};
  EXPECT_EQ(eval_ok("zero ? 'zeros' : 'ones'", env).as_string(), "zeros");
  EXPECT_EQ(eval_ok("!zero ? \"zeros\" : \"ones\"", env).as_string(), "ones");
  EXPECT_EQ(eval_ok("scheme", env).as_string(), "pytorch");
  EXPECT_TRUE(eval_ok("scheme == 'pytorch'", env).as_bool());
  EXPECT_TRUE(eval_ok("scheme != 'zeros'", env).as_bool());
  EXPECT_EQ(eval_ok("''").as_string(), "");
  EXPECT_EQ(eval_ok("'a b'").str(), "'a b'");
  EXPECT_NE(eval_err("'open").find("unterminated string"), std::string::npos);
  EXPECT_NE(eval_err("'a' + 'b'").find("needs integers"), std::string::npos);
  EXPECT_NE(eval_err("'a' < 'b'").find("needs integers"), std::string::npos);
  EXPECT_NE(eval_err("!'a'").find("needs booleans"), std::string::npos);
  EXPECT_NE(eval_err("'a' == 1").find("one type"), std::string::npos);
  EXPECT_NE(eval_err("scheme ? 1 : 2", env).find("must be a boolean"), std::string::npos);
}

TEST(Expr, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(10000, '(') + "1" + std::string(10000, ')');
  EXPECT_NE(eval_err(deep).find("nested too deeply"), std::string::npos);
  const std::string negs = std::string(10000, '-') + "1";
  EXPECT_NE(eval_err(negs).find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace zoc::yaml
