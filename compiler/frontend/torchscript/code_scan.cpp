// The lexical scan of code_scan.h. One pass over the text: string literals (with their escapes,
// triple-quoted too) and comments are skipped, brackets counted, and each statement (a line
// outside brackets) checked as it ends: its indentation, its operators, whether it assigns a
// class attribute without a type, whether it names __setstate__.
#include "compiler/frontend/torchscript/code_scan.h"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/zip_archive.h"

namespace zoc::torchscript {
namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The operator tokens of a statement's text (strings already blanked): symbols, keywords.
int count_operators(std::string_view s) {
  int n = 0;
  for (size_t i = 0; i < s.size();) {
    if (word_char(s[i])) {
      size_t j = i;
      while (j < s.size() && word_char(s[j])) ++j;
      const std::string_view w = s.substr(i, j - i);
      n += w == "and" || w == "or" || w == "not" || w == "is" || w == "in";
      i = j;
    } else if (std::string_view("+-*/%&|^~<>=!@").find(s[i]) != std::string_view::npos) {
      size_t j = i;  // "**", "//", "<<=", "->", "==" each count once
      while (j < s.size() &&
             std::string_view("+-*/%&|^~<>=!@").find(s[j]) != std::string_view::npos) {
        ++j;
      }
      n += s.substr(i, j - i) != "=" && s.substr(i, j - i) != "->";
      i = j;
    } else {
      ++i;
    }
  }
  return n;
}

class CodeScanner {
 public:
  CodeScanner(const std::string& record, std::string_view code) : record_(record), code_(code) {}
  Status run();

 private:
  // One statement, its text with string literals blanked, starting at line `line`.
  Status statement(std::string_view text, int indent, int line);
  Status refuse(int line, const std::string& what) const {
    return Error{
        fmt::format("unsafe TorchScript code: record '{}' line {} {}; zoc refused the "
                    "file before loading any of it",
                    quoted_name(record_), line, what)};
  }

  const std::string& record_;
  std::string_view code_;
  int class_member_indent_ = -1;  // the indentation of the current class's members, once seen
  bool in_class_ = false;
};

Status CodeScanner::statement(std::string_view text, int indent, int line) {
  size_t first = text.find_first_not_of(" \t\f\r\n");
  if (first == std::string_view::npos) return Status::success();
  text.remove_prefix(first);
  for (size_t at = text.find("__setstate__"); at != std::string_view::npos;
       at = text.find("__setstate__", at + 1)) {
    const size_t end = at + 12;
    if ((at == 0 || !word_char(text[at - 1])) && (end >= text.size() || !word_char(text[end]))) {
      return refuse(line,
                    "has __setstate__, a method LibTorch runs while it loads the file, before zoc "
                    "could refuse what it does; the models zoc compiles never define one");
    }
  }
  if (indent > kMaxCodeIndent) {
    return refuse(line, fmt::format("is indented {} columns, blocks nested deeper than zoc lets "
                                    "LibTorch's recursive compiler take (zoc reads at most {}; "
                                    "torch.jit.save writes a few levels)",
                                    indent, kMaxCodeIndent));
  }
  if (const int ops = count_operators(text); ops > kMaxCodeOperators) {
    return refuse(line,
                  fmt::format("has {} operators in one statement, more than LibTorch's "
                              "recursive compiler takes (zoc reads at most {}; torch.jit.save "
                              "writes one operation per statement)",
                              ops, kMaxCodeOperators));
  }
  // Class bodies: which statements are members, and whether one assigns without a type.
  if (indent == 0) {  // an enum's members are untyped assignments, LibTorch imports them apart
    in_class_ = (text.substr(0, 6) == "class " || text.substr(0, 6) == "class\t") &&
                text.find("(Enum)") == std::string_view::npos;
    class_member_indent_ = -1;
    return Status::success();
  }
  if (!in_class_) return Status::success();
  if (class_member_indent_ < 0) class_member_indent_ = indent;
  if (indent != class_member_indent_) return Status::success();
  size_t name_end = 0;
  while (name_end < text.size() && word_char(text[name_end])) ++name_end;
  size_t eq = text.find_first_not_of(" \t", name_end);
  const bool untyped = name_end > 0 && eq != std::string_view::npos && text[eq] == '=' &&
                       (eq + 1 >= text.size() || text[eq + 1] != '=');
  const std::string_view name = text.substr(0, name_end);
  if (untyped && name != "__parameters__" && name != "__buffers__" && name != "__annotations__") {
    return refuse(line, fmt::format("assigns class attribute '{}' without a type, which crashes "
                                    "LibTorch 1.13's importer (torch.jit.save writes class "
                                    "constants as 'name : Final[type] = value')",
                                    quoted_name(std::string(name))));
  }
  return Status::success();
}

Status CodeScanner::run() {
  std::string text;  // the current statement, string literals blanked
  int depth = 0, line = 1, start_line = 1, indent = 0;
  bool line_start = true;
  for (size_t i = 0; i < code_.size(); ++i) {
    const char c = code_[i];
    if (line_start && depth == 0) {  // a statement's indentation
      if (c == ' ' || c == '\t') {
        ++indent;
        continue;
      }
      line_start = false;
      start_line = line;
    }
    if (c == '\'' || c == '"') {
      const bool triple = code_.substr(i, 3) == std::string(3, c);
      size_t j = i + (triple ? 3 : 1);
      while (j < code_.size() &&
             !(triple ? code_.substr(j, 3) == std::string(3, c) : code_[j] == c)) {
        if (code_[j] == '\\') ++j;
        if (j < code_.size() && code_[j] == '\n') ++line;
        ++j;
      }
      i = std::min(code_.size(), j + (triple ? 3 : 1)) - 1;
      text += "\"\"";
      continue;
    }
    if (c == '#') {
      while (i + 1 < code_.size() && code_[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxCodeBracketDepth) {
        return refuse(line, fmt::format("nests brackets more than {} deep, which overflows "
                                        "LibTorch's recursive parser (torch.jit.save writes a "
                                        "few levels)",
                                        kMaxCodeBracketDepth));
      }
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    if (c == '\n') {
      ++line;
      if (depth == 0) {
        ZOC_TRY(statement(text, indent, start_line));
        text.clear();
        indent = 0;
        line_start = true;
        continue;
      }
    }
    text += c;
  }
  return statement(text, indent, start_line);
}

}  // namespace

Status check_code(const std::string& record, std::string_view code) {
  return CodeScanner(record, code).run();
}

}  // namespace zoc::torchscript
