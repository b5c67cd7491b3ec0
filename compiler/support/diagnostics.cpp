// Rendering of diagnostics in the `file:line:col: severity: message` form that editors and
// FileCheck understand.
#include "compiler/support/diagnostics.h"

#include <fmt/format.h>

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
  return fmt::format("{}: {}: {}", loc.str(), sev, message);
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
