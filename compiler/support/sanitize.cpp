// Implementation of the identifier and comment sanitizer (see sanitize.h for why).
#include "compiler/support/sanitize.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace zoc {
namespace {

constexpr std::array<std::string_view, 97> kReserved = {
    "alignas",   "alignof",      "and",          "and_eq",   "asm",         "auto",
    "bitand",    "bitor",        "bool",         "break",    "case",        "catch",
    "char",      "char8_t",      "char16_t",     "char32_t", "class",       "compl",
    "concept",   "const",        "consteval",    "constexpr", "constinit",  "const_cast",
    "continue",  "co_await",     "co_return",    "co_yield", "decltype",    "default",
    "delete",    "do",           "double",       "dynamic_cast", "else",    "enum",
    "explicit",  "export",       "extern",       "false",    "float",       "for",
    "friend",    "goto",         "if",           "inline",   "int",         "long",
    "mutable",   "namespace",    "new",          "noexcept", "not",         "not_eq",
    "nullptr",   "operator",     "or",           "or_eq",    "private",     "protected",
    "public",    "register",     "reinterpret_cast", "requires", "return",  "short",
    "signed",    "sizeof",       "static",       "static_assert", "static_cast", "struct",
    "switch",    "template",     "this",         "thread_local", "throw",   "true",
    "try",       "typedef",      "typeid",       "typename", "union",       "unsigned",
    "using",     "virtual",      "void",         "volatile", "wchar_t",     "while",
    "xor",       "xor_eq",       "main",         "NULL",     "assert",      "errno",
    "stdin"};

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string sanitize_identifier(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  for (char c : name) out += is_ident_char(c) ? c : '_';
  if (out.empty()) return "_";
  // Identifiers with a double underscore or a leading underscore+capital are reserved in C++.
  for (size_t i = 0; i + 1 < out.size();) {
    if (out[i] == '_' && out[i + 1] == '_') {
      out.erase(i, 1);
    } else {
      ++i;
    }
  }
  if ((out[0] >= '0' && out[0] <= '9') || out[0] == '_') out = "l" + out;
  if (std::find(kReserved.begin(), kReserved.end(), out) != kReserved.end()) out = "l_" + out;
  return out;
}

std::string sanitize_comment(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  // "*/" could end a block comment and "??" forms trigraphs in old dialects; neutralize both.
  for (size_t pos = 0; (pos = out.find("*/", pos)) != std::string::npos;) out.replace(pos, 2, "* /");
  return out;
}

}  // namespace zoc
