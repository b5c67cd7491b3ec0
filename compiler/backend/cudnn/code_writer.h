// An indenting text writer for emitted source (the emitter's only way to produce text).
//
// Emitted code is read by people, so it is formatted as it is written: `line()` writes one
// indented line with fmt formatting, `block()` opens a `{ ... }` scope that closes when the
// returned guard dies. No indentation macros, no string concatenation spread over files.
#pragma once

#include <string>

#include <fmt/format.h>

namespace zoc::cudnn {

class CodeWriter {
 public:
  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    raw_line(fmt::format(f, std::forward<Args>(args)...));
  }
  void raw_line(const std::string& text) {
    if (!text.empty()) out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
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

  const std::string& str() const { return out_; }
  bool empty() const { return out_.empty(); }

 private:
  std::string out_;
  int indent_ = 0;
};

}  // namespace zoc::cudnn
