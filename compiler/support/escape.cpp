// Implementation of escape_for_message (escape.h says why every printed model string goes
// through it).
#include "compiler/support/escape.h"

#include <cstdint>
#include <cstdio>

namespace zoc {
namespace {

// The length of the well-formed UTF-8 sequence at text[i] (2 to 4 bytes; overlong forms,
// surrogates and code points past U+10FFFF are malformed), or 0; sets `cp` to its code point.
size_t utf8_length(std::string_view text, size_t i, uint32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b = byte(i);
  size_t n = 0;
  uint32_t min = 0;
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2, cp = b & 0x1f, min = 0x80;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3, cp = b & 0x0f, min = 0x800;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4, cp = b & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Code points a terminal acts on instead of showing: C1 controls and bidirectional overrides.
bool hidden(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void append_hex(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  }
}

}  // namespace

std::string escape_for_message(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if (uint32_t cp = 0; c >= 0x80) {
      const size_t n = utf8_length(text, i, cp);
      if (n == 0 || hidden(cp)) {
        append_hex(out, text.substr(i, n == 0 ? 1 : n));
      } else {
        out.append(text.substr(i, n));
      }
      i += n == 0 ? 1 : n;
      continue;
    } else {
      append_hex(out, text.substr(i, 1));
    }
    ++i;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size() - i) + " more bytes)";
  return out;
}

}  // namespace zoc
