// A recursive-descent evaluator for the model format's expressions (see expr.h). Precedence,
// lowest first: ?:, ||, &&, == !=, < <= > >=, + -, * / %, unary - !. String literals are
// quoted with ' or " and have no escapes.
#include "compiler/frontend/yaml/expr.h"

#include <cctype>

#include <fmt/format.h>

#include "compiler/support/checked_math.h"

namespace zoc::yaml {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, const ExprEnv& env) : s_(text), env_(env) {}

  Expected<ExprValue> run() {
    auto v = ternary(0);
    if (!v) return v;
    skip_ws();
    if (pos_ != s_.size()) return err(fmt::format("unexpected '{}'", s_[pos_]));
    return v;
  }

 private:
  using R = Expected<ExprValue>;

  Error err(const std::string& msg) const {
    return Error{fmt::format("in expression '{}' at offset {}: {}", s_, pos_, msg)};
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip_ws();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  R need_int(R v, const char* op) const {
    if (v && !v->is_int()) return err(fmt::format("operator '{}' needs integers", op));
    return v;
  }
  R need_bool(R v, const char* op) const {
    if (v && !v->is_bool()) return err(fmt::format("operator '{}' needs booleans", op));
    return v;
  }

  R ternary(int depth) {
    if (depth > kMaxDepth) return err("expression nested too deeply");
    auto c = logical_or(depth);
    if (!c) return c;
    if (!eat("?")) return c;
    if (!c->is_bool()) return err("the condition of '?:' must be a boolean");
    auto a = ternary(depth + 1);
    if (!a) return a;
    if (!eat(":")) return err("expected ':' in '?:'");
    auto b = ternary(depth + 1);
    if (!b) return b;
    return c->as_bool() ? a : b;
  }
  R logical_or(int depth) {
    auto a = logical_and(depth);
    while (a && eat("||")) {
      auto b = need_bool(logical_and(depth), "||");
      a = need_bool(a, "||");
      if (!a || !b) return !a ? a : b;
      a = ExprValue{a->as_bool() || b->as_bool()};
    }
    return a;
  }
  R logical_and(int depth) {
    auto a = equality(depth);
    while (a && eat("&&")) {
      auto b = need_bool(equality(depth), "&&");
      a = need_bool(a, "&&");
      if (!a || !b) return !a ? a : b;
      a = ExprValue{a->as_bool() && b->as_bool()};
    }
    return a;
  }
  R equality(int depth) {
    auto a = relational(depth);
    while (a) {
      bool eq;
      if (eat("==")) {
        eq = true;
      } else if (eat("!=")) {
        eq = false;
      } else {
        break;
      }
      auto b = relational(depth);
      if (!b) return b;
      if (a->v.index() != b->v.index()) return err("'==' and '!=' compare values of one type");
      a = ExprValue{(a->v == b->v) == eq};
    }
    return a;
  }
  R relational(int depth) {
    auto a = additive(depth);
    while (a) {
      std::string_view op;
      for (std::string_view cand : {"<=", ">=", "<", ">"}) {
        if (eat(cand)) {
          op = cand;
          break;
        }
      }
      if (op.empty()) break;
      auto b = need_int(additive(depth), "comparison");
      a = need_int(a, "comparison");
      if (!a || !b) return !a ? a : b;
      const int64_t x = a->as_int(), y = b->as_int();
      const bool r = op == "<=" ? x <= y : op == ">=" ? x >= y : op == "<" ? x < y : x > y;
      a = ExprValue{r};
    }
    return a;
  }
  R additive(int depth) {
    auto a = multiplicative(depth);
    while (a) {
      char op;
      if (eat("+")) {
        op = '+';
      } else if (eat("-")) {
        op = '-';
      } else {
        break;
      }
      auto b = need_int(multiplicative(depth), op == '+' ? "+" : "-");
      a = need_int(a, op == '+' ? "+" : "-");
      if (!a || !b) return !a ? a : b;
      auto r =
          op == '+' ? checked_add(a->as_int(), b->as_int()) : checked_sub(a->as_int(), b->as_int());
      if (!r) return err("integer overflow");
      a = ExprValue{*r};
    }
    return a;
  }
  R multiplicative(int depth) {
    auto a = unary(depth);
    while (a) {
      char op;
      if (eat("*")) {
        op = '*';
      } else if (eat("/")) {
        op = '/';
      } else if (eat("%")) {
        op = '%';
      } else {
        break;
      }
      const char name[2] = {op, 0};
      auto b = need_int(unary(depth), name);
      a = need_int(a, name);
      if (!a || !b) return !a ? a : b;
      const int64_t x = a->as_int(), y = b->as_int();
      if (op == '*') {
        auto r = checked_mul(x, y);
        if (!r) return err("integer overflow");
        a = ExprValue{*r};
      } else {
        if (y == 0) return err("division by zero");
        if (x == INT64_MIN && y == -1) return err("integer overflow");
        a = ExprValue{op == '/' ? x / y : x % y};
      }
    }
    return a;
  }
  R unary(int depth) {
    if (depth > kMaxDepth) return err("expression nested too deeply");
    if (eat("-")) {
      auto a = need_int(unary(depth + 1), "-");
      if (!a) return a;
      if (a->as_int() == INT64_MIN) return err("integer overflow");
      return ExprValue{-a->as_int()};
    }
    if (eat("!")) {
      auto a = need_bool(unary(depth + 1), "!");
      if (!a) return a;
      return ExprValue{!a->as_bool()};
    }
    return primary(depth);
  }
  R primary(int depth) {
    skip_ws();
    if (pos_ >= s_.size()) return err("expected a value");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      auto v = ternary(depth + 1);
      if (!v) return v;
      if (!eat(")")) return err("expected ')'");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t n = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        auto m = checked_mul(n, 10);
        if (!m || !checked_add(*m, s_[pos_] - '0')) return err("integer literal too large");
        n = *m + (s_[pos_] - '0');
        ++pos_;
      }
      return ExprValue{n};
    }
    if (c == '\'' || c == '"') {
      const size_t end = s_.find(c, pos_ + 1);
      if (end == std::string_view::npos) return err("unterminated string");
      const std::string text(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return ExprValue{text};
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        ++pos_;
      }
      const std::string_view name = s_.substr(start, pos_ - start);
      if (name == "true") return ExprValue{true};
      if (name == "false") return ExprValue{false};
      auto it = env_.find(name);
      if (it == env_.end()) {
        pos_ = start;
        return err(fmt::format("unknown name '{}'", name));
      }
      return it->second;
    }
    return err(fmt::format("unexpected '{}'", c));
  }

  std::string_view s_;
  const ExprEnv& env_;
  size_t pos_ = 0;
};

}  // namespace

std::string ExprValue::str() const {
  if (is_string()) return "'" + as_string() + "'";
  return is_int() ? std::to_string(as_int()) : (as_bool() ? "true" : "false");
}

Expected<ExprValue> eval_expr(std::string_view text, const ExprEnv& env) {
  return Parser(text, env).run();
}

}  // namespace zoc::yaml
