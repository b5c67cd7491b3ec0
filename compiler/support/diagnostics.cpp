// Rendering of diagnostics in the `file:line:col: severity: message` form that editors and
// FileCheck understand.
#include "compiler/support/diagnostics.h"

#include <fmt/format.h>

#include "compiler/support/sanitize.h"

namespace zoc {

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  if (line <= 0) return file;
  if (col <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, col);
}

std::string Diagnostic::render() const {
  const char* sev = severity == Severity::kError     ? "error"
                    : severity == Severity::kWarning ? "warning"
                                                     : "note";
  // Names from files are escaped where messages quote them (shown_text); this is the last guard,
  // for a string that slipped through: no escape sequence reaches the terminal, and no text
  // starts a line that could pass for a diagnostic of its own.
  return fmt::format("{}: {}: {}", terminal_safe(loc.str(), false), sev,
                     terminal_safe(message, /*continuation_lines=*/true));
}

void Diagnostics::error(const SourceLoc& loc, std::string message) {
  items_.push_back({Severity::kError, loc, std::move(message)});
  ++errors_;
}

void Diagnostics::warning(const SourceLoc& loc, std::string message) {
  items_.push_back({Severity::kWarning, loc, std::move(message)});
}

void Diagnostics::note(const SourceLoc& loc, std::string message) {
  items_.push_back({Severity::kNote, loc, std::move(message)});
}

void Diagnostics::file_error(const std::string& path, std::string message) {
  const std::string prefix = path + ": ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  error(SourceLoc{path, 0, 0}, std::move(message));
}

std::string Diagnostics::render() const {
  std::string out;
  for (const Diagnostic& d : items_) {
    out += d.render();
    out += '\n';
  }
  return out;
}

Error Diagnostics::to_error() const {
  std::string out;
  for (const Diagnostic& d : items_) {
    if (d.severity == Severity::kWarning) continue;
    if (!out.empty()) out += '\n';
    out += d.render();
  }
  return Error{out};
}

void Diagnostics::merge(const Diagnostics& other) {
  for (const Diagnostic& d : other.items_) {
    items_.push_back(d);
    if (d.severity == Severity::kError) ++errors_;
  }
}

}  // namespace zoc
