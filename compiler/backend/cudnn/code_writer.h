// An indenting text writer for emitted source (the emitter's only way to produce text).
//
// Emitted code is read by people, so it is formatted as it is written: `line()` writes one
// indented line with fmt formatting, `block()` opens a `{ ... }` scope that closes when the
// returned guard dies. No indentation macros, no string concatenation spread over files.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace zoc::cudnn {

class CodeWriter {
 public:
  // max_columns: where wrapped() and comment() break lines; less than kMaxColumns for text that
  // is appended indented into another writer.
  // (Implicit, so that structs holding writers stay aggregates.)
  CodeWriter(size_t max_columns = kMaxColumns) : max_columns_(max_columns) {}  // NOLINT

  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    raw_line(fmt::format(f, std::forward<Args>(args)...));
  }
  void raw_line(const std::string& text) {
    if (!text.empty()) out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  // An access specifier inside a class block, one space in from the class (Google style).
  void access(const std::string& text) {
    out_.append(static_cast<size_t>(indent_ > 0 ? indent_ - 1 : 0) * 2 + 1, ' ');
    out_ += text + "\n";
  }
  // An empty line, unless the text already ends with one (or is empty).
  void blank() {
    const size_t n = out_.size();
    if (n > 0 && !(n >= 2 && out_[n - 1] == '\n' && out_[n - 2] == '\n')) out_ += '\n';
  }
  void append(const CodeWriter& other) {
    // Re-indent another writer's text under the current indentation.
    size_t start = 0;
    const std::string& t = other.out_;
    while (start < t.size()) {
      const size_t end = t.find('\n', start);
      raw_line(t.substr(start, end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }

  class Scope {
   public:
    Scope(CodeWriter& w, std::string close, bool indent)
        : w_(w), close_(std::move(close)), indent_(indent) {
      if (indent_) ++w_.indent_;
    }
    ~Scope() {
      if (indent_) --w_.indent_;
      w_.raw_line(close_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CodeWriter& w_;
    std::string close_;
    bool indent_;
  };

  // Writes `head {` and returns a guard that writes `}` (or `close`) when destroyed.
  [[nodiscard]] Scope block(const std::string& head, std::string close = "}") {
    raw_line(head + " {");
    return Scope(*this, std::move(close), true);
  }
  // A namespace: like block(), but its body is not indented (Google style).
  [[nodiscard]] Scope ns(const std::string& head, std::string close) {
    raw_line(head + " {");
    blank();
    return Scope(*this, std::move(close), false);
  }

  // Generated lines stay within this many columns where the writer decides the breaks.
  static constexpr size_t kMaxColumns = 100;

  // `head`, then `items` separated by ", ", then `tail`, broken into lines of at most
  // kMaxColumns with continuation lines indented four more (long initializer lists).
  void wrapped(const std::string& head, const std::vector<std::string>& items,
               const std::string& tail) {
    const std::string indent(static_cast<size_t>(indent_) * 2, ' ');
    const std::string continuation = indent + "    ";
    std::string current = indent + head;
    bool fresh = true;  // nothing after head or the continuation indent yet
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string piece = items[i] + (i + 1 < items.size() ? "," : tail);
      const size_t sep = fresh ? 0 : 1;
      if (current != continuation && current.size() + sep + piece.size() > max_columns_) {
        out_ += current + "\n";
        current = continuation + piece.substr(std::min(piece.find_first_not_of(' '), piece.size()));
      } else {
        current += (fresh ? "" : " ") + piece;
      }
      fresh = false;
    }
    if (items.empty()) current += tail;
    out_ += current + "\n";
  }

  // A `//` comment, word-wrapped at kMaxColumns.
  void comment(const std::string& text) {
    const std::string lead(static_cast<size_t>(indent_) * 2, ' ');
    std::string current = lead + "//";
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find(' ', at);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(at, end - at);
      if (current.size() > lead.size() + 2 && current.size() + 1 + word.size() > max_columns_) {
        out_ += current + "\n";
        current = lead + "//";
      }
      if (!word.empty()) current += " " + word;
      at = end + 1;
    }
    out_ += current + "\n";
  }

  const std::string& str() const { return out_; }
  bool empty() const { return out_.empty(); }

 private:
  std::string out_;
  int indent_ = 0;
  size_t max_columns_;
};

}  // namespace zoc::cudnn
