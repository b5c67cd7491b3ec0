// Text from a model file, made safe to print in a diagnostic.
//
// Model files are written by strangers, and zoc prints parts of them: a TorchScript exception's
// message, module and attribute names, op names, source file names from debug records, LibTorch's
// own errors quoting the file's code. Printed raw, an ESC byte drives the user's terminal (clears
// it, retitles the window, hides text) and a newline forges a diagnostic line of its own
// ("model.pt:1:1: note: all checks passed"). This is the one function that turns such text into a
// single line that shows every byte for what it is. sanitize.h's sanitize_comment does the same
// for generated C++ (quotes escaped, ASCII only); this one keeps readable Unicode, since messages
// are for people.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zoc {

// `text` as one printable line, at most about `max_bytes` long: printable ASCII and well-formed
// UTF-8 kept; a backslash doubled; newline, tab and carriage return as \n, \t, \r; every other
// control byte, DEL, byte of malformed UTF-8, C1 control (U+0080..U+009F) and bidirectional
// override (U+202A..U+202E, U+2066..U+2069, which reorder what a terminal shows) as \xHH bytes.
// Longer text is cut on a character boundary and ends with "... (N more bytes)".
std::string escape_for_message(std::string_view text, size_t max_bytes = 400);

}  // namespace zoc
