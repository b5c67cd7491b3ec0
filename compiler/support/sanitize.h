// The sanitizers through which every user-provided string passes before it reaches generated
// source code or a message on the user's terminal.
//
// Layer names come from model files and TorchScript module paths ("layer1.0.conv1",
// "features/0", anything at all). Pasting them into C++ unescaped would let a model file
// inject code; this maps any string to a safe, readable C++ identifier, and to a safe comment.
// Printed raw in a diagnostic, the same strings could move the cursor, recolour or retitle the
// terminal, or (with a newline) forge a diagnostic line of their own (issue 31): shown_text
// makes them safe to print, and Diagnostic::render passes every message through
// terminal_safe as a last guard.
#pragma once

#include <string>
#include <string_view>

namespace zoc {

// "layer1.0.conv1" -> "layer1_0_conv1"; leading digits and C++ keywords get a prefix;
// non-identifier bytes become '_'; empty input becomes "_". Distinct inputs may map to the
// same identifier: callers that need uniqueness add a numeric suffix.
std::string sanitize_identifier(std::string_view name);

// Text safe inside a // comment or a "..." string literal: printable ASCII only, with
// backslashes, quotes and control bytes escaped, and no line breaks.
std::string sanitize_comment(std::string_view text);

// The longest user string a message quotes whole: longer ones are cut, with "...".
inline constexpr size_t kMaxShownBytes = 200;

// A string from a model, weights or input file, or from a library that quotes one (ONNX's
// checker), as a message shows it. Printable ASCII and well-formed UTF-8 stay as they are, so
// names in any script read as written; a backslash becomes \\; control bytes (newline
// included), bytes that are not UTF-8, and the code points a terminal acts on or that hide text
// (C1 controls, bidirectional overrides and isolates, zero-width and line-separator characters,
// the byte-order mark) become \xNN per byte. Cut after `max_bytes` bytes of input.
std::string shown_text(std::string_view text, size_t max_bytes = kMaxShownBytes);

// What Diagnostic::render does to every location and message: the escapes of shown_text except
// that backslashes stay (text that already went through shown_text is unchanged), and a newline
// stays only when `continuation_lines` and two spaces follow it, the indented continuation line
// of a list (ONNX's and TorchScript's unsupported nodes), so no text can start a line of its own.
std::string terminal_safe(std::string_view text, bool continuation_lines);

}  // namespace zoc
