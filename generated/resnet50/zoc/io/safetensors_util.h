// Building blocks shared by the safetensors and .npy readers and writers.
//
// Both formats are read by the compiler and by the generated code, which may depend on nothing
// but the C++17 standard library and POSIX, and both need the same small pieces: the dtype
// table, exact fp16/bf16 <-> float32 conversions (they are also what the generated constructor
// uses to convert weights), overflow-checked sizes, user strings quoted safely for messages, a
// whole-file read, and an atomic write (temporary file, fsync, rename) so that a crash never
// leaves half a file behind. The host must be little-endian, as every CUDA host is.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors_json.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zoc assumes a little-endian host"
#endif

namespace zoc::st {

// ---------------------------------------------------------------------------------------------
// Helpers shared with npy.h.
namespace detail {

inline uint64_t load_le(const uint8_t* p, int nbytes) {
  uint64_t v = 0;
  for (int i = nbytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline bool mul_overflows(uint64_t a, uint64_t b, uint64_t* r) {
  return __builtin_mul_overflow(a, b, r);
}
inline bool add_overflows(uint64_t a, uint64_t b, uint64_t* r) {
  return __builtin_add_overflow(a, b, r);
}

inline std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// A user string for a message: quoted, control bytes and invalid UTF-8 escaped, clipped.
inline std::string quoted(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (out.size() > 120) {
      out += "...";
      break;
    }
    size_t len = json::utf8_sequence_length(p + i, s.size() - i);
    if (p[i] == '\'' || p[i] == '\\') {
      out += '\\';
      out += static_cast<char>(p[i]);
    } else if (len == 0 || p[i] < 0x20 || p[i] == 0x7F) {
      out += "\\x";
      out += kHex[p[i] >> 4];
      out += kHex[p[i] & 15];
      len = 1;
    } else {
      out.append(s.data() + i, len);
    }
    i += len == 0 ? 1 : len;
  }
  return out + "'";
}

inline std::string clip(std::string_view s) {
  return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "...";
}

// "[64, 3, 7, 7]" (or "(64, 3)" with python=true), clipped after 16 dimensions.
inline std::string shape_string(const std::vector<int64_t>& shape, bool python = false) {
  std::string s = python ? "(" : "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    if (i == 16) {
      s += "... " + std::to_string(shape.size() - 16) + " more";
      break;
    }
    s += std::to_string(shape[i]);
  }
  if (python && shape.size() == 1) s += ",";
  return s + (python ? ")" : "]");
}

// Element count of a non-negative shape; nullopt if a dimension is negative or the count
// overflows 64 bits. A zero dimension makes the count 0 whatever the other dimensions are.
inline std::optional<uint64_t> element_count(const std::vector<int64_t>& shape) {
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
  }
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (mul_overflows(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

// double -> float with IEEE round-to-nearest-even, without the undefined behaviour of casting
// an out-of-range double.
inline float double_to_float(double d) {
  constexpr double kFltMax = static_cast<double>(std::numeric_limits<float>::max());
  constexpr double kHalfway = kFltMax + 0x1p103;  // between FLT_MAX and 2^128: ties to 2^128
  if (d != d) return static_cast<float>(d);
  if (d >= kHalfway) return std::numeric_limits<float>::infinity();
  if (d <= -kHalfway) return -std::numeric_limits<float>::infinity();
  if (d > kFltMax) return std::numeric_limits<float>::max();
  if (d < -kFltMax) return -std::numeric_limits<float>::max();
  return static_cast<float>(d);
}

// Reads a whole regular file.
inline Status read_file(const std::string& path, std::vector<uint8_t>* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  if (fd < 0) return Error{path + ": cannot open: " + errno_text(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error{path + ": cannot stat: " + errno_text(err)};
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0) {
    ::close(fd);
    return Error{path + ": not a regular file"};
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      return Error{path +
                   ": cannot read: " + (err ? errno_text(err) : "file shrank while reading")};
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status();
}

// Writes the chunks to PATH.tmp.<pid>, fsyncs, and renames it to PATH, so that readers see
// either the old file or the complete new one, never a partial one.
inline Status write_file_atomic(const std::string& path,
                                const std::vector<std::pair<const void*, size_t>>& chunks) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{path + ": cannot create " + tmp + ": " + errno_text(errno)};
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(Error{path + ": cannot " + what + " " + tmp + ": " + errno_text(err)});
  };
  for (const auto& [ptr, size] : chunks) {
    const auto* p = static_cast<const uint8_t*>(ptr);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd, p + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("write");
      done += static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0) return fail("sync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error{path + ": cannot close " + tmp + ": " + errno_text(err)};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error{path + ": cannot rename " + tmp + " to it: " + errno_text(err)};
  }
  return Status();
}

// A read-only file mapping, unmapped when destroyed.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t size) : addr_(addr), size_(size) {}
  Mapping(Mapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

 private:
  void reset() {
    if (addr_) ::munmap(addr_, size_);
    addr_ = nullptr;
  }
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Data types.

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

// Name and element size of each DType, in enum order.
struct DTypeInfo {
  const char* name;
  size_t size;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},     {"I32", 4},
    {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

inline const char* dtype_name(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeInfo) ? kDTypeInfo[i].name : "?";
}

inline size_t dtype_size(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeInfo) ? kDTypeInfo[i].size : 1;
}

inline std::optional<DType> parse_dtype(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DType::F8_E5M2); ++i) {
    auto t = static_cast<DType>(i);
    if (name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// fp16 / bf16 <-> float32, exact IEEE semantics (subnormals, infinities, NaN payloads kept
// where they fit), rounding to nearest, ties to even.

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000 | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  uint32_t e = 113;  // subnormal: mant * 2^-24; normalize the leading 1 into bit 10
  while (!(mant & 0x400)) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3FF) << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7FFFFFFF;
  if (x > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00 | ((x >> 13) & 0x3FF));  // NaN
  if (x >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65520: rounds to inf
  if (x >= 0x38800000) {  // normal half: rebias exponent, round 13 dropped bits
    uint32_t r = (x - 0x38000000) >> 13;
    uint32_t rem = x & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  if (x <= 0x33000000) return sign;  // <= 2^-25: rounds to zero (2^-25 is a tie to even 0)
  // Subnormal half: value = mant * 2^(e-150), in units of 2^-24 that is mant >> (126 - e).
  uint32_t e = x >> 23;
  uint32_t mant = (x & 0x7FFFFF) | 0x800000;
  uint32_t shift = 126 - e;  // 14..24
  uint32_t r = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace zoc::st
