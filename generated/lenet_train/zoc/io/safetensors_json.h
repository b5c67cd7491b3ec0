// A small, strict JSON pull parser for the safetensors header, and JSON string quoting for its
// writer.
//
// The safetensors header is untrusted input read by both the compiler and the generated code,
// which may depend on nothing but the standard library, so zoc carries its own parser instead of
// nlohmann::json. It is a pull parser (the caller asks for the next key, string or number) so
// that a 100 MB header never becomes a 100 MB tree: memory is bounded by what the caller keeps.
// It accepts exactly RFC 8259 JSON: well-formed UTF-8 only, \uXXXX escapes with correctly paired
// surrogates, no leading zeros, no trailing commas, nesting at most `max_depth` deep. Integers
// are reported as a 64-bit magnitude with sign and overflow flags, never as a double, so that
// sizes and offsets are never rounded. After the first error every call fails and error() /
// error_offset() say what was wrong and at which byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace zoc::json {

// Length of the well-formed UTF-8 sequence starting at p (at most n bytes available), or 0 if
// the bytes there are not one (overlong forms, surrogates, code points above U+10FFFF).
inline size_t utf8_sequence_length(const unsigned char* p, size_t n) {
  if (n == 0) return 0;
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return len;
}

inline bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    size_t len = utf8_sequence_length(p + i, s.size() - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Appends s as a JSON string literal. s must be valid UTF-8 (check with is_valid_utf8 first).
inline void append_quoted(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

// An integer as written: 64-bit magnitude plus sign, so no value is ever rounded.
struct Number {
  bool negative = false;
  bool integral = false;  // no fraction and no exponent
  bool overflow = false;  // integral, but the magnitude does not fit in 64 bits
  uint64_t magnitude = 0;
  std::string_view text;  // the number as written, for messages
};

enum class Kind { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull, kEnd, kInvalid };

// "an object", "a string", ...: for messages like "shape is a string, not an array".
inline const char* kind_name(Kind k) {
  static const char* const kNames[] = {"an object", "an array", "a string", "a number", "true",
                                       "false",     "null",     "missing",  "not JSON"};
  auto i = static_cast<size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "not JSON";
}

class Reader {
 public:
  explicit Reader(std::string_view text, int max_depth = 64)
      : text_(text), max_depth_(max_depth < 0 ? 0 : max_depth) {}

  // The kind of the next value (after whitespace), without consuming it. kEnd at the end of the
  // text; kInvalid for a byte that cannot start a value, or after an error.
  Kind peek() {
    if (failed_) return Kind::kInvalid;
    skip_ws();
    if (pos_ >= text_.size()) return Kind::kEnd;
    char c = text_[pos_];
    switch (c) {
      case '{':
        return Kind::kObject;
      case '[':
        return Kind::kArray;
      case '"':
        return Kind::kString;
      case 't':
        return Kind::kTrue;
      case 'f':
        return Kind::kFalse;
      case 'n':
        return Kind::kNull;
      default:
        return (c == '-' || (c >= '0' && c <= '9')) ? Kind::kNumber : Kind::kInvalid;
    }
  }

  // Byte offset of the next token (after whitespace).
  size_t offset() {
    if (!failed_) skip_ws();
    return pos_;
  }

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  size_t error_offset() const { return error_offset_; }

  // Reads a string value; out may be null to only validate it.
  bool read_string(std::string* out) {
    if (peek() != Kind::kString) return fail_unexpected("a string");
    ++pos_;
    if (out) out->clear();
    while (true) {
      if (pos_ >= text_.size()) return fail("unterminated string");
      auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        if (!read_escape(out)) return false;
        continue;
      }
      if (c < 0x20)
        return fail("control character " + hex_byte(c) + " in string (must be escaped)");
      size_t len = utf8_sequence_length(reinterpret_cast<const unsigned char*>(text_.data()) + pos_,
                                        text_.size() - pos_);
      if (len == 0) return fail("invalid UTF-8 byte " + hex_byte(c) + " in string");
      if (out) out->append(text_.data() + pos_, len);
      pos_ += len;
    }
  }

  bool read_number(Number* out) {
    if (peek() != Kind::kNumber) return fail_unexpected("a number");
    size_t start = pos_;
    Number n;
    if (text_[pos_] == '-') {
      n.negative = true;
      ++pos_;
    }
    if (!is_digit_at(pos_)) return fail("expected a digit after '-'");
    n.integral = true;
    if (text_[pos_] == '0') {
      ++pos_;
      if (is_digit_at(pos_)) return fail("leading zeros are not allowed in numbers");
    } else {
      while (is_digit_at(pos_)) {
        auto d = static_cast<uint64_t>(text_[pos_] - '0');
        if (n.magnitude > (UINT64_MAX - d) / 10) n.overflow = true;
        n.magnitude = n.magnitude * 10 + d;  // wraps harmlessly once overflow is set
        ++pos_;
      }
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      n.integral = false;
      ++pos_;
      if (!is_digit_at(pos_)) return fail("expected a digit after '.'");
      while (is_digit_at(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      n.integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!is_digit_at(pos_)) return fail("expected a digit in the exponent");
      while (is_digit_at(pos_)) ++pos_;
    }
    if (!n.integral) n.overflow = false;
    n.text = text_.substr(start, pos_ - start);
    if (out) *out = n;
    return true;
  }

  // Reads true, false or null; *kind (if not null) says which.
  bool read_literal(Kind* kind) {
    Kind k = peek();
    const char* word = k == Kind::kTrue ? "true" : k == Kind::kFalse ? "false" : "null";
    if (k != Kind::kTrue && k != Kind::kFalse && k != Kind::kNull) {
      return fail_unexpected("true, false or null");
    }
    std::string_view w(word);
    if (text_.substr(pos_, w.size()) != w)
      return fail("invalid literal (expected '" + std::string(w) + "')");
    pos_ += w.size();
    if (kind) *kind = k;
    return true;
  }

  // Objects: begin_object(), then next_member() until it sets *done; after each key the caller
  // reads or skips exactly one value.
  bool begin_object() { return begin('{', "an object"); }
  bool next_member(std::string* key, bool* done) {
    *done = false;
    if (!next_item('}', done)) return false;
    if (*done) return true;
    if (peek() != Kind::kString) {
      return fail(pos_ < text_.size() && text_[pos_] == '}' ? "trailing comma before '}'"
                                                            : "expected a string key");
    }
    if (!read_string(key)) return false;
    skip_ws();
    if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':' after an object key");
    ++pos_;
    return true;
  }

  // Arrays: begin_array(), then next_element() until it sets *done; after each call that does
  // not set it the caller reads or skips exactly one value.
  bool begin_array() { return begin('[', "an array"); }
  bool next_element(bool* done) {
    *done = false;
    if (!next_item(']', done)) return false;
    if (!*done && peek() == Kind::kInvalid && pos_ < text_.size() && text_[pos_] == ']') {
      return fail("trailing comma before ']'");
    }
    return true;
  }

  // Validates and skips one value of any kind.
  bool skip_value() {
    switch (peek()) {
      case Kind::kObject: {
        if (!begin_object()) return false;
        std::string key;
        bool done = false;
        while (next_member(&key, &done) && !done) {
          if (!skip_value()) return false;
        }
        return !failed_;
      }
      case Kind::kArray: {
        if (!begin_array()) return false;
        bool done = false;
        while (next_element(&done) && !done) {
          if (!skip_value()) return false;
        }
        return !failed_;
      }
      case Kind::kString:
        return read_string(nullptr);
      case Kind::kNumber:
        return read_number(nullptr);
      case Kind::kTrue:
      case Kind::kFalse:
      case Kind::kNull:
        return read_literal(nullptr);
      case Kind::kEnd:
      case Kind::kInvalid:
        break;
    }
    return fail_unexpected("a value");
  }

  // Succeeds if only whitespace is left.
  bool expect_end() {
    if (failed_) return false;
    skip_ws();
    if (pos_ < text_.size()) return fail(describe_here() + " after the end of the JSON value");
    return true;
  }

 private:
  static std::string hex_byte(unsigned char c) {
    static const char kHex[] = "0123456789ABCDEF";
    return std::string("0x") + kHex[c >> 4] + kHex[c & 15];
  }

  bool is_digit_at(size_t i) const {
    return i < text_.size() && text_[i] >= '0' && text_[i] <= '9';
  }

  void skip_ws() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool fail(std::string message) {
    if (!failed_) {
      failed_ = true;
      error_ = std::move(message);
      error_offset_ = pos_;
    }
    return false;
  }

  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of header";
    auto c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x21 && c < 0x7F) return std::string("unexpected '") + static_cast<char>(c) + "'";
    return "unexpected byte " + hex_byte(c);
  }

  bool fail_unexpected(const char* expected) {
    if (failed_) return false;
    skip_ws();
    if (pos_ >= text_.size())
      return fail(std::string("unexpected end of header, expected ") + expected);
    return fail(describe_here() + ", expected " + expected);
  }

  bool begin(char open, const char* what) {
    if (peek() == Kind::kInvalid || pos_ >= text_.size() || text_[pos_] != open) {
      return fail_unexpected(what);
    }
    if (static_cast<int>(first_.size()) >= max_depth_) {
      return fail("nesting deeper than " + std::to_string(max_depth_) + " levels");
    }
    ++pos_;
    first_.push_back(true);
    return true;
  }

  // Consumes the separator before the next item of the innermost container, or its closing
  // bracket (then pops it and sets *done).
  bool next_item(char close, bool* done) {
    if (failed_) return false;
    if (first_.empty()) return fail("internal: no open container");
    skip_ws();
    if (pos_ >= text_.size()) {
      return fail(std::string("unexpected end of header, expected ',' or '") + close + "'");
    }
    if (text_[pos_] == close) {
      ++pos_;
      first_.pop_back();
      *done = true;
      return true;
    }
    if (first_.back()) {
      first_.back() = false;
      return true;
    }
    if (text_[pos_] != ',') {
      return fail(describe_here() + ", expected ',' or '" + std::string(1, close) + "'");
    }
    ++pos_;
    skip_ws();
    return true;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Reads the 4 hex digits of a \u escape whose backslash is at pos_.
  bool read_u_hex(uint32_t* out) {
    if (pos_ + 6 > text_.size()) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (size_t i = 2; i < 6; ++i) {
      int h = hex_value(text_[pos_ + i]);
      if (h < 0) return fail("invalid \\u escape (expected 4 hex digits)");
      v = v * 16 + static_cast<uint32_t>(h);
    }
    pos_ += 6;
    *out = v;
    return true;
  }

  static void append_utf8(std::string* out, uint32_t cp) {
    if (!out) return;
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Reads one escape sequence; the backslash is at pos_.
  bool read_escape(std::string* out) {
    if (pos_ + 1 >= text_.size()) return fail("unterminated string");
    char e = text_[pos_ + 1];
    char simple = 0;
    switch (e) {
      case '"':
        simple = '"';
        break;
      case '\\':
        simple = '\\';
        break;
      case '/':
        simple = '/';
        break;
      case 'b':
        simple = '\b';
        break;
      case 'f':
        simple = '\f';
        break;
      case 'n':
        simple = '\n';
        break;
      case 'r':
        simple = '\r';
        break;
      case 't':
        simple = '\t';
        break;
      case 'u':
        break;
      default: {
        auto c = static_cast<unsigned char>(e);
        return fail(c >= 0x21 && c < 0x7F ? std::string("invalid escape '\\") + e + "' in string"
                                          : "invalid escape in string");
      }
    }
    if (simple) {
      if (out) out->push_back(simple);
      pos_ += 2;
      return true;
    }
    uint32_t cp = 0;
    if (!read_u_hex(&cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      pos_ -= 6;
      return fail("unpaired low surrogate in \\u escape");
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (pos_ + 1 >= text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
        pos_ -= 6;
        return fail("unpaired high surrogate in \\u escape");
      }
      uint32_t low = 0;
      if (!read_u_hex(&low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) {
        pos_ -= 12;
        return fail("high surrogate in \\u escape not followed by a low surrogate");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int max_depth_;
  std::vector<bool> first_;  // per open container: no item read yet
  bool failed_ = false;
  std::string error_;
  size_t error_offset_ = 0;
};

}  // namespace zoc::json
