// Implementation of the identifier, comment and message sanitizers (see sanitize.h for why).
#include "compiler/support/sanitize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

namespace zoc {
namespace {

constexpr std::array<std::string_view, 97> kReserved = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char8_t",     "char16_t",
    "char32_t",      "class",       "compl",
    "concept",       "const",       "consteval",
    "constexpr",     "constinit",   "const_cast",
    "continue",      "co_await",    "co_return",
    "co_yield",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned",
    "using",         "virtual",     "void",
    "volatile",      "wchar_t",     "while",
    "xor",           "xor_eq",      "main",
    "NULL",          "assert",      "errno",
    "stdin"};

// The length of the UTF-8 sequence at the start of `s` if it is well formed and encodes a code
// point that is safe to print, else 0.
size_t printable_utf8_length(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  size_t len = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3Fu);
  }
  const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;  // overlong
  const bool hidden = cp <= 0x9F                         // C1 controls (CSI is U+009B)
                      || cp == 0xAD || cp == 0x61C       // soft hyphen, Arabic letter mark
                      || (cp >= 0x200B && cp <= 0x200F)  // zero-width, LRM, RLM
                      || (cp >= 0x2028 && cp <= 0x202E)  // separators, embeddings, overrides
                      || (cp >= 0x2060 && cp <= 0x206F)  // word joiner, isolates, ...
                      || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB);
  return hidden ? 0 : len;
}

void append_hex(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

// The common walk of shown_text and terminal_safe.
std::string escape(std::string_view text, size_t max_bytes, bool escape_backslash,
                   bool continuation_lines) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 8);
  size_t i = 0;
  while (i < text.size() && i < max_bytes) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\' && escape_backslash) {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' && continuation_lines && text.substr(i + 1, 2) == "  ") {
      out += '\n';
      ++i;
    } else if (const size_t len = c >= 0x80 ? printable_utf8_length(text.substr(i)) : 0; len) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      append_hex(out, c);
      ++i;
    }
  }
  if (i < text.size()) out += "...";
  return out;
}

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

std::string shown_text(std::string_view text, size_t max_bytes) {
  return escape(text, max_bytes, /*escape_backslash=*/true, /*continuation_lines=*/false);
}

std::string terminal_safe(std::string_view text, bool continuation_lines) {
  return escape(text, text.size(), /*escape_backslash=*/false, continuation_lines);
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
  for (size_t pos = 0; (pos = out.find("*/", pos)) != std::string::npos;)
    out.replace(pos, 2, "* /");
  return out;
}

}  // namespace zoc
