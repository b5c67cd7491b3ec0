// Source locations and the diagnostics sink every compiler stage reports into.
//
// zoc reports errors against the user's text (`file:line:col: error: ...`, as MLIR and clang
// do) and collects all of them in one run, so a model with five mistakes shows five errors,
// not the first one. Stages take a Diagnostics& and return normally; the driver decides the
// exit code from has_errors().
#pragma once

#include <string>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc {

// A position in the user's input. Line and column are 1-based; 0 means unknown. For
// TorchScript input, `file` holds the module path and source range instead.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;

  bool known() const { return !file.empty(); }
  std::string str() const;  // "file:line:col", "file:line", "file" or "<unknown>"
};

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity;
  SourceLoc loc;
  std::string message;

  std::string render() const;  // "file:line:col: error: message"
};

class Diagnostics {
 public:
  void error(const SourceLoc& loc, std::string message);
  void warning(const SourceLoc& loc, std::string message);
  void note(const SourceLoc& loc, std::string message);
  // An error at the file `path` for a message that may start with "path: " (the runtime's
  // safetensors and npy readers and writers name the file they fail on): the location says it,
  // so the prefix is dropped rather than printed twice.
  void file_error(const std::string& path, std::string message);

  bool has_errors() const { return errors_ > 0; }
  size_t error_count() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return items_; }

  // All diagnostics, one per line, in the order they were reported.
  std::string render() const;
  // The errors folded into one Error (for APIs that return Expected).
  Error to_error() const;
  // Moves the diagnostics of `other` into this sink.
  void merge(const Diagnostics& other);

 private:
  std::vector<Diagnostic> items_;
  size_t errors_ = 0;
};

}  // namespace zoc
