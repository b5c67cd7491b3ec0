// NumPy .npy reader (format versions 1.0, 2.0, 3.0) and float32 writer (1.0), fully validated.
//
// Inputs and reference outputs travel between PyTorch and zoc as .npy files: the generated
// main.cpp reads its input image batch from one, and the numerical tests compare against
// outputs that models/export.py saved with numpy. Like safetensors.h this header is
// dependency-free C++17 + POSIX, because the generated folders carry it, and it treats every
// file as untrusted: the magic, version, header length and the header's Python dict literal
// ('descr', 'fortran_order', 'shape', in any order, numpy's trailing comma and padding allowed)
// are checked, only the little-endian dtypes zoc uses are accepted, Fortran order is refused,
// sizes are overflow-checked and the data must be exactly as long as the shape says. Errors are
// values whose messages start with the file path. The writer produces the same bytes as
// numpy.save of a C-contiguous float32 array and replaces the file atomically.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors_util.h"

namespace zoc::npy {

struct Array {
  std::string descr;  // one of '<f4' '<f8' '<f2' '<i8' '<i4' '|u1' '|b1'
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // numel() elements, little-endian, C order
  size_t numel() const {
    auto n = st::detail::element_count(shape);
    return n ? static_cast<size_t>(*n) : 0;
  }
};

namespace detail {

inline constexpr const char* kAcceptedDescrs = "'<f4', '<f8', '<f2', '<i8', '<i4', '|u1', '|b1'";

// Element size of an accepted descr, 0 for any other.
inline size_t descr_size(std::string_view d) {
  if (d == "<f8" || d == "<i8") return 8;
  if (d == "<f4" || d == "<i4") return 4;
  if (d == "<f2") return 2;
  if (d == "|u1" || d == "|b1") return 1;
  return 0;
}

// Parses the header's dict literal, e.g. "{'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }" followed by spaces and a newline: exactly the subset of Python that
// numpy writes and numpy's reader accepts for these three keys.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;

  // Empty on success, otherwise what is wrong.
  std::string parse() {
    bool has_descr = false, has_fortran = false, has_shape = false;
    skip_ws();
    if (!eat('{')) return at("expected '{'");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (!read_string(&key)) return error_;
      skip_ws();
      if (!eat(':')) return at("expected ':' after key '" + key + "'");
      skip_ws();
      bool* seen = key == "descr"           ? &has_descr
                   : key == "fortran_order" ? &has_fortran
                   : key == "shape"         ? &has_shape
                                            : nullptr;
      if (!seen) {
        return "unexpected key " + st::detail::quoted(key) +
               " in header (expected 'descr', 'fortran_order' and 'shape')";
      }
      if (*seen) return "duplicate key '" + key + "' in header";
      *seen = true;
      if (seen == &has_descr) {
        if (pos_ < s_.size() && s_[pos_] != '\'' && s_[pos_] != '"') {
          return at("'descr' must be a string (structured dtypes are not supported)");
        }
        if (!read_string(&descr)) return error_;
      } else if (seen == &has_fortran) {
        if (s_.substr(pos_, 4) == "True") {
          fortran_order = true;
          pos_ += 4;
        } else if (s_.substr(pos_, 5) == "False") {
          pos_ += 5;
        } else {
          return at("'fortran_order' must be True or False");
        }
      } else if (!read_shape()) {
        return error_;
      }
      skip_ws();
      if (eat('}')) break;
      if (!eat(',')) return at("expected ',' or '}'");
    }
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n')) ++pos_;
    if (pos_ != s_.size()) return at("unexpected text after the header dict");
    if (!has_descr) return "header has no 'descr' key";
    if (!has_fortran) return "header has no 'fortran_order' key";
    if (!has_shape) return "header has no 'shape' key";
    return "";
  }

 private:
  std::string at(const std::string& what) {
    std::string found = "end of header";
    if (pos_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[pos_]);
      found =
          (c >= 0x21 && c < 0x7F) ? std::string("'") + s_[pos_] + "'" : "byte " + std::to_string(c);
    }
    error_ = "header dict: " + what + " at header byte " + std::to_string(pos_) + " (found " +
             found + ")";
    return error_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool is_digit() const { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; }

  // A quoted string of printable ASCII without escapes (all that these keys and values use).
  bool read_string(std::string* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
      at("expected a quoted string");
      return false;
    }
    char quote = s_[pos_++];
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c < 0x20 || c >= 0x7F || c == '\\') {
        at("unsupported character in string");
        return false;
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) {
      at("unterminated string");
      return false;
    }
    *out = std::string(s_.substr(start, pos_ - start));
    ++pos_;
    return true;
  }

  // A tuple of non-negative integers: (), (3,), (2, 3), (2, 3,).
  bool read_shape() {
    if (!eat('(')) {
      at("'shape' must be a tuple of integers");
      return false;
    }
    skip_ws();
    while (!eat(')')) {
      if (pos_ < s_.size() && s_[pos_] == '-') {
        at("shape entry is negative");
        return false;
      }
      if (!is_digit()) {
        at("expected a non-negative integer in 'shape'");
        return false;
      }
      if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') {
        at("leading zero in a 'shape' entry");
        return false;
      }
      uint64_t v = 0;
      while (is_digit()) {
        auto d = static_cast<uint64_t>(s_[pos_] - '0');
        if (v > (static_cast<uint64_t>(INT64_MAX) - d) / 10) {
          at("'shape' entry is too large");
          return false;
        }
        v = v * 10 + d;
        ++pos_;
      }
      shape.push_back(static_cast<int64_t>(v));
      skip_ws();
      if (eat(',')) {
        skip_ws();
        continue;
      }
      if (!eat(')')) {
        at("expected ',' or ')' in 'shape'");
        return false;
      }
      if (shape.size() == 1) {  // "(3)" is the integer 3 in Python, not a tuple
        --pos_;
        at("'shape' (n) is not a tuple (a 1-d shape is written (n,))");
        return false;
      }
      break;
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace detail

// Parses a .npy file held in memory; messages start with `label`.
inline Expected<Array> parse(const uint8_t* bytes, size_t size,
                             const std::string& label = "<memory>") {
  auto fail = [&](const std::string& m) { return Error{label + ": " + m}; };
  if (size < 10) {
    return fail("file is " + std::to_string(size) +
                " bytes, too short for a .npy header (at least 10)");
  }
  if (!bytes || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
    return fail("not a .npy file (it does not start with \\x93NUMPY)");
  }
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    return fail("unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) {
    return fail("file is " + std::to_string(size) + " bytes, too short for a version " +
                std::to_string(major) + ".0 header (at least " + std::to_string(prefix) + ")");
  }
  const uint64_t header_len = st::detail::load_le(bytes + 8, major == 1 ? 2 : 4);
  if (header_len > size - prefix) {
    return fail("header length " + std::to_string(header_len) +
                " runs past the end of the file (only " + std::to_string(size - prefix) +
                " bytes follow)");
  }
  detail::HeaderParser header(
      std::string_view(reinterpret_cast<const char*>(bytes + prefix), header_len));
  std::string err = header.parse();
  if (!err.empty()) return fail(err);
  Array a;
  a.descr = header.descr;
  a.shape = header.shape;
  const size_t item = detail::descr_size(a.descr);
  if (item == 0) {
    return fail("unsupported dtype " + st::detail::quoted(a.descr) +
                " (supported: " + detail::kAcceptedDescrs + ")");
  }
  if (header.fortran_order) {
    return fail("fortran_order True is not supported (save a C-contiguous array)");
  }
  const std::string shape = st::detail::shape_string(a.shape, true);
  auto numel = st::detail::element_count(a.shape);
  if (!numel) return fail("element count of shape " + shape + " overflows 64 bits");
  uint64_t need = 0;
  if (st::detail::mul_overflows(*numel, item, &need)) {
    return fail("byte size of shape " + shape + " of '" + a.descr + "' overflows 64 bits");
  }
  const size_t offset = prefix + static_cast<size_t>(header_len);
  const uint64_t have = size - offset;
  if (have < need) {
    return fail("data is " + std::to_string(have) + " bytes but shape " + shape + " of '" +
                a.descr + "' needs " + std::to_string(need) + " (truncated file?)");
  }
  if (have > need) {
    return fail(std::to_string(have - need) + " trailing bytes after the " + std::to_string(need) +
                " bytes of data of shape " + shape + " of '" + a.descr + "'");
  }
  a.data.assign(bytes + offset, bytes + size);
  return a;
}

inline Expected<Array> read(const std::string& path) {
  std::vector<uint8_t> bytes;
  Status s = st::detail::read_file(path, &bytes);
  if (!s.ok()) return s.error();
  return parse(bytes.data(), bytes.size(), path);
}

// Reads a '<f4', '<f8' or '<f2' array as float32 (exact IEEE conversion; '<f8' rounds to
// nearest even). *shape, if not null, receives the shape.
inline Expected<std::vector<float>> read_float32(const std::string& path,
                                                 std::vector<int64_t>* shape) {
  Expected<Array> a = read(path);
  if (!a.ok()) return a.error();
  const size_t n = a->numel();
  std::vector<float> out(n);
  const uint8_t* p = a->data.data();
  if (a->descr == "<f4") {
    if (n) std::memcpy(out.data(), p, n * 4);
  } else if (a->descr == "<f8") {
    for (size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = st::detail::double_to_float(d);
    }
  } else if (a->descr == "<f2") {
    for (size_t i = 0; i < n; ++i) {
      out[i] = st::half_to_float(static_cast<uint16_t>(st::detail::load_le(p + 2 * i, 2)));
    }
  } else {
    return Error{path + ": dtype '" + a->descr +
                 "' is not a float type (read_float32 accepts '<f4', '<f8' and '<f2')"};
  }
  if (shape) *shape = a->shape;
  return out;
}

// Writes a C-contiguous float32 array as numpy.save does (format 1.0, or 2.0 if the header
// does not fit in 65535 bytes), atomically.
inline Status write_float32(const std::string& path, const float* data,
                            const std::vector<int64_t>& shape) {
  auto numel = st::detail::element_count(shape);
  uint64_t bytes = 0;
  if (!numel || st::detail::mul_overflows(*numel, 4, &bytes)) {
    return Error{path + ": shape " + st::detail::shape_string(shape, true) +
                 " is negative or its byte size overflows 64 bits"};
  }
  if (bytes > 0 && !data) return Error{path + ": data is null"};
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + st::detail::shape_string(shape, true) +
      ", }";
  // numpy leaves room to grow the first dimension in place (GROWTH_AXIS_MAX_DIGITS = 21).
  if (!shape.empty()) dict.append(21 - std::to_string(shape[0]).size(), ' ');
  // Pad with spaces and end with '\n' so that the data starts at a multiple of 64 bytes; numpy
  // always adds at least one space.
  size_t prefix = 10;
  size_t pad = 64 - (prefix + dict.size() + 1) % 64;
  if (dict.size() + pad + 1 > 65535) {
    prefix = 12;
    pad = 64 - (prefix + dict.size() + 1) % 64;
  }
  std::string header = dict + std::string(pad, ' ') + "\n";
  std::vector<uint8_t> head = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(prefix == 10 ? 1 : 2), 0};
  for (size_t i = 0; i < prefix - 8; ++i) head.push_back(uint8_t(header.size() >> (8 * i)));
  return st::detail::write_file_atomic(path, {{head.data(), head.size()},
                                              {header.data(), header.size()},
                                              {data, static_cast<size_t>(bytes)}});
}

}  // namespace zoc::npy
