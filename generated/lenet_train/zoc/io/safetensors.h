// safetensors reader and writer, fully validated, for the compiler and the generated code.
//
// Weights reach zoc as safetensors files with PyTorch state_dict names (DESIGN.md), and the same
// reader runs inside every generated model folder, which may depend on nothing but the C++17
// standard library and POSIX. A weights file is untrusted input: this header checks every field
// of it (header length, JSON syntax, dtypes, shapes, overflow, offsets that must tile the data
// section exactly) and reports the first problem as a zoc::Error whose message starts with the
// file path, instead of crashing or reading out of bounds. Nothing is read through a cast
// pointer: tensor data may be unaligned, so all loads go through memcpy or byte shifts. The
// dtype table, fp16/bf16 conversions and file helpers live in safetensors_util.h.
#pragma once

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors_json.h"
#include "zoc/io/safetensors_util.h"

namespace zoc::st {

// ---------------------------------------------------------------------------------------------
// Reading.

// One tensor of an open File. `data` points into the file's mapping (valid while the File
// lives) and may be unaligned: read it with memcpy, or convert with to_float32().
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  std::string source = {};  // file path or "<memory>", so that messages can name the file

  // Product of the shape (checked when the file was opened; SIZE_MAX if a hand-built view's
  // shape overflows or is negative).
  size_t numel() const {
    auto n = detail::element_count(shape);
    return n && *n <= std::numeric_limits<size_t>::max() ? static_cast<size_t>(*n)
                                                         : std::numeric_limits<size_t>::max();
  }
};

class File {
 public:
  // Longer headers are rejected, as the reference implementation rejects them.
  static constexpr uint64_t kMaxHeaderSize = 100ull * 1000 * 1000;

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() = default;

  // Maps the file read-only and validates it. The file must not be truncated while open.
  static Expected<File> open(const std::string& path) {
    File f;
    f.path_ = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
    if (fd < 0) return Error{path + ": cannot open: " + detail::errno_text(errno)};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return Error{path + ": cannot stat: " + detail::errno_text(err)};
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return Error{path + ": not a regular file"};
    }
    auto size = static_cast<uint64_t>(st.st_size);
    if (size >= 8) {  // shorter files are rejected by parse(); mmap cannot map 0 bytes
      void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        return Error{path + ": cannot mmap: " + detail::errno_text(err)};
      }
      f.mapping_ = detail::Mapping(addr, static_cast<size_t>(size));
      f.base_ = static_cast<const uint8_t*>(addr);
      f.size_ = static_cast<size_t>(size);
    } else {
      f.owned_.resize(static_cast<size_t>(size));
      f.base_ = f.owned_.data();
      f.size_ = f.owned_.size();
    }
    ::close(fd);
    Status s = f.parse();
    if (!s.ok()) return s.error();
    return Expected<File>(std::move(f));
  }

  // Validates an in-memory file (tests, fuzzing); messages start with `label`.
  static Expected<File> from_bytes(std::vector<uint8_t> bytes, std::string label = "<memory>") {
    File f;
    f.path_ = std::move(label);
    f.owned_ = std::move(bytes);
    f.base_ = f.owned_.data();
    f.size_ = f.owned_.size();
    Status s = f.parse();
    if (!s.ok()) return s.error();
    return Expected<File>(std::move(f));
  }

  // In the order of their data offsets.
  const std::vector<TensorView>& tensors() const { return tensors_; }

  const TensorView* find(std::string_view name) const {
    auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                               [&](size_t i, std::string_view n) { return tensors_[i].name < n; });
    if (it == by_name_.end() || tensors_[*it].name != name) return nullptr;
    return &tensors_[*it];
  }

  // The optional "__metadata__" map, in file order.
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  File() = default;

  struct Entry {
    TensorView view;
    uint64_t begin = 0, end = 0;
  };

  Status fail(const std::string& message) const { return Error{path_ + ": " + message}; }
  Status json_error(const json::Reader& r) const {
    return fail("header is not valid JSON: " + r.error() + " at header byte " +
                std::to_string(r.error_offset()));
  }

  // Reads element `index` of the array `name` of a tensor entry (messages start with `t`): a
  // non-negative integer no larger than `max`.
  Status read_uint(json::Reader& r, const std::string& t, const char* name, size_t index,
                   uint64_t max, uint64_t* out) const {
    json::Kind k = r.peek();
    json::Number n;
    if (k == json::Kind::kNumber && r.read_number(&n) && n.integral && !n.overflow &&
        (!n.negative || n.magnitude == 0) && n.magnitude <= max) {
      *out = n.magnitude;
      return Status();
    }
    const std::string what = t + name + "[" + std::to_string(index) + "]";
    if (k != json::Kind::kNumber)
      return fail(what + " is " + json::kind_name(k) + ", not an integer");
    if (r.failed()) return json_error(r);
    const std::string shown = what + " = " + detail::clip(n.text);
    if (!n.integral) return fail(shown + " is not an integer");
    if (n.negative) return fail(shown + " is negative");
    return fail(shown + " is too large");
  }

  Status read_metadata(json::Reader& r) {
    json::Kind k = r.peek();
    if (k != json::Kind::kObject) {
      return fail(std::string("__metadata__ is ") + json::kind_name(k) +
                  ", not an object of strings");
    }
    std::unordered_set<std::string> keys;
    std::string key, value;
    bool done = false;
    r.begin_object();
    while (r.next_member(&key, &done) && !done) {
      if (!keys.insert(key).second)
        return fail("__metadata__ has duplicate key " + detail::quoted(key));
      k = r.peek();
      if (k != json::Kind::kString) {
        return fail("__metadata__ value of " + detail::quoted(key) + " is " + json::kind_name(k) +
                    ", not a string");
      }
      if (!r.read_string(&value)) break;
      metadata_.emplace_back(key, value);
    }
    return r.failed() ? json_error(r) : Status();
  }

  Status read_entry(json::Reader& r, uint64_t data_size, Entry* e) const {
    const std::string t = "tensor " + detail::quoted(e->view.name) + ": ";
    json::Kind k = r.peek();
    if (k != json::Kind::kObject)
      return fail(t + "entry is " + json::kind_name(k) + ", not an object");
    bool has_dtype = false, has_shape = false, has_offsets = false;
    std::string field, s;
    bool done = false;
    r.begin_object();
    while (r.next_member(&field, &done) && !done) {
      bool* seen = field == "dtype"          ? &has_dtype
                   : field == "shape"        ? &has_shape
                   : field == "data_offsets" ? &has_offsets
                                             : nullptr;
      if (!seen) {
        return fail(t + "unexpected field " + detail::quoted(field) +
                    " (a tensor entry has exactly dtype, shape and data_offsets)");
      }
      if (*seen) return fail(t + "duplicate field " + detail::quoted(field));
      *seen = true;
      k = r.peek();
      if (seen == &has_dtype) {
        if (k != json::Kind::kString)
          return fail(t + "dtype is " + json::kind_name(k) + ", not a string");
        if (!r.read_string(&s)) return json_error(r);
        auto dt = parse_dtype(s);
        if (!dt) {
          return fail(
              t + "unknown dtype " + detail::quoted(s) +
              " (known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2)");
        }
        e->view.dtype = *dt;
        continue;
      }
      const char* name = seen == &has_shape ? "shape" : "data_offsets";
      if (k != json::Kind::kArray) {
        return fail(t + name + " is " + json::kind_name(k) + ", not an array of integers");
      }
      r.begin_array();
      size_t count = 0;
      while (r.next_element(&done) && !done) {
        uint64_t v = 0;
        if (seen == &has_shape) {
          Status st = read_uint(r, t, name, count, static_cast<uint64_t>(INT64_MAX), &v);
          if (!st.ok()) return st;
          e->view.shape.push_back(static_cast<int64_t>(v));
        } else if (count < 2) {
          Status st = read_uint(r, t, name, count, UINT64_MAX, &v);
          if (!st.ok()) return st;
          (count == 0 ? e->begin : e->end) = v;
        } else if (!r.skip_value()) {
          break;
        }
        ++count;
      }
      if (r.failed()) return json_error(r);
      if (seen == &has_offsets && count != 2) {
        return fail(t + "data_offsets must be two integers [begin, end], but it has " +
                    std::to_string(count) + (count == 1 ? " entry" : " entries"));
      }
    }
    if (r.failed()) return json_error(r);
    if (!has_dtype) return fail(t + "missing field 'dtype'");
    if (!has_shape) return fail(t + "missing field 'shape'");
    if (!has_offsets) return fail(t + "missing field 'data_offsets'");

    const std::string shape = detail::shape_string(e->view.shape);
    const char* dtype = dtype_name(e->view.dtype);
    auto numel = detail::element_count(e->view.shape);
    if (!numel) return fail(t + "element count of shape " + shape + " overflows 64 bits");
    uint64_t bytes = 0;
    if (detail::mul_overflows(*numel, dtype_size(e->view.dtype), &bytes)) {
      return fail(t + "byte size of shape " + shape + " of " + dtype + " overflows 64 bits");
    }
    const std::string offsets =
        "data offsets [" + std::to_string(e->begin) + ", " + std::to_string(e->end) + ")";
    if (e->begin > e->end) return fail(t + offsets + " have begin > end");
    if (e->end - e->begin != bytes) {
      return fail(t + offsets + " hold " + std::to_string(e->end - e->begin) + " bytes but shape " +
                  shape + " of " + dtype + " needs " + std::to_string(bytes));
    }
    if (e->end > data_size) {
      return fail(t + offsets + " end past the " + std::to_string(data_size) +
                  "-byte data section (truncated file?)");
    }
    e->view.nbytes = static_cast<size_t>(bytes);
    return Status();
  }

  Status parse() {
    if (size_ < 8) {
      return fail("file is " + std::to_string(size_) +
                  " bytes, shorter than 8 bytes (the header length field)");
    }
    const uint64_t n = detail::load_le(base_, 8);
    const std::string len = "header length " + std::to_string(n);
    if (n == 0) return fail("header length is 0");
    if (n > kMaxHeaderSize) return fail(len + " exceeds the limit of 100000000 bytes");
    if (n > size_ - 8) {
      return fail(len + " runs past the end of the file (only " + std::to_string(size_ - 8) +
                  " bytes follow the length field)");
    }
    const std::string_view header(reinterpret_cast<const char*>(base_ + 8), static_cast<size_t>(n));
    const uint8_t* data = base_ + 8 + n;
    const uint64_t data_size = size_ - 8 - n;
    {  // Syntax first, so that a broken header is reported as such rather than by its content.
      json::Reader check(header);
      if (!check.skip_value() || !check.expect_end()) return json_error(check);
    }
    json::Reader r(header);
    json::Kind k = r.peek();
    if (k != json::Kind::kObject) {
      return fail(std::string("header is ") + json::kind_name(k) + ", not a JSON object");
    }
    std::vector<Entry> entries;
    std::unordered_set<std::string> names;
    bool seen_metadata = false;
    std::string key;
    bool done = false;
    r.begin_object();
    while (r.next_member(&key, &done) && !done) {
      if (key == "__metadata__") {
        if (seen_metadata) return fail("duplicate key '__metadata__'");
        seen_metadata = true;
        Status s = read_metadata(r);
        if (!s.ok()) return s;
        continue;
      }
      if (key.empty()) return fail("tensor name is empty");
      if (!names.insert(key).second) return fail("duplicate tensor name " + detail::quoted(key));
      Entry e;
      e.view.name = key;
      e.view.source = path_;
      Status s = read_entry(r, data_size, &e);
      if (!s.ok()) return s;
      entries.push_back(std::move(e));
    }
    if (r.failed()) return json_error(r);

    // The tensors must tile the data section exactly: no overlap, no gap, nothing left over.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      if (a.begin != b.begin) return a.begin < b.begin;
      if (a.end != b.end) return a.end < b.end;
      return a.view.name < b.view.name;
    });
    uint64_t pos = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
      if (e.begin < pos) {
        const Entry& p = entries[i - 1];  // pos > 0, so there is a previous entry
        return fail("tensor " + detail::quoted(e.view.name) + ": data offsets " + range +
                    " overlap tensor " + detail::quoted(p.view.name) + " at [" +
                    std::to_string(p.begin) + ", " + std::to_string(p.end) + ")");
      }
      if (e.begin > pos) {
        return fail("gap in the data section: bytes [" + std::to_string(pos) + ", " +
                    std::to_string(e.begin) + ") belong to no tensor (next is tensor " +
                    detail::quoted(e.view.name) + " at " + range + ")");
      }
      pos = e.end;
    }
    if (pos < data_size) {
      return fail("trailing bytes: the data section holds " + std::to_string(data_size) +
                  " bytes but the tensors cover only " + std::to_string(pos));
    }
    tensors_.reserve(entries.size());
    for (Entry& e : entries) {
      e.view.data = data + e.begin;
      tensors_.push_back(std::move(e.view));
    }
    by_name_.resize(tensors_.size());
    for (size_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
    std::sort(by_name_.begin(), by_name_.end(),
              [&](size_t a, size_t b) { return tensors_[a].name < tensors_[b].name; });
    return Status();
  }

  std::string path_;
  detail::Mapping mapping_;
  std::vector<uint8_t> owned_;  // from_bytes(); its buffer does not move when File moves
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<TensorView> tensors_;
  std::vector<size_t> by_name_;  // indices into tensors_, sorted by name
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// ---------------------------------------------------------------------------------------------
// Conversion.

inline bool is_float_dtype(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         t == DType::F8_E4M3 || t == DType::F8_E5M2;
}

// Converts a F64/F32/F16/BF16 tensor to float32 (exact IEEE conversion; F64 rounds to nearest
// even). out_count must equal the element count.
inline Status to_float32(const TensorView& t, float* out, size_t out_count) {
  std::string pre =
      (t.source.empty() ? "" : t.source + ": ") + "tensor " + detail::quoted(t.name) + ": ";
  if (t.dtype != DType::F64 && t.dtype != DType::F32 && t.dtype != DType::F16 &&
      t.dtype != DType::BF16) {
    return Error{pre + "cannot convert " + dtype_name(t.dtype) +
                 " to float32 (only F64, F32, F16 and BF16 convert)"};
  }
  auto numel = detail::element_count(t.shape);
  uint64_t bytes = 0;
  if (!numel || detail::mul_overflows(*numel, dtype_size(t.dtype), &bytes) || bytes != t.nbytes) {
    return Error{pre + "holds " + std::to_string(t.nbytes) + " bytes, which does not match shape " +
                 detail::shape_string(t.shape) + " of " + dtype_name(t.dtype)};
  }
  if (out_count != *numel) {
    return Error{pre + "output has room for " + std::to_string(out_count) +
                 " floats but the tensor has " + std::to_string(*numel) + " elements"};
  }
  if (*numel > 0 && (!out || !t.data)) return Error{pre + "null data or output pointer"};
  const size_t n = static_cast<size_t>(*numel);
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case DType::F32:
      if (n) std::memcpy(out, p, n * 4);
      break;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = detail::double_to_float(d);
      }
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i)
        out[i] = half_to_float(static_cast<uint16_t>(detail::load_le(p + 2 * i, 2)));
      break;
    default:  // BF16
      for (size_t i = 0; i < n; ++i)
        out[i] = bf16_to_float(static_cast<uint16_t>(detail::load_le(p + 2 * i, 2)));
      break;
  }
  return Status();
}

// Number of NaN and infinite elements of a floating tensor (F8_E4M3 has NaN but no infinity);
// 0 for integer and bool tensors.
inline size_t count_non_finite(const TensorView& t) {
  if (!is_float_dtype(t.dtype) || !t.data) return 0;
  const size_t size = dtype_size(t.dtype), n = t.nbytes / size;
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = detail::load_le(t.data + i * size, static_cast<int>(size));
    switch (t.dtype) {
      case DType::F64:
        count += (v & 0x7FF0000000000000ull) == 0x7FF0000000000000ull;
        break;
      case DType::F32:
        count += (v & 0x7F800000u) == 0x7F800000u;
        break;
      case DType::F16:
        count += (v & 0x7C00u) == 0x7C00u;
        break;
      case DType::BF16:
        count += (v & 0x7F80u) == 0x7F80u;
        break;
      case DType::F8_E4M3:
        count += (v & 0x7Fu) == 0x7Fu;
        break;
      default:
        count += (v & 0x7Cu) == 0x7Cu;
        break;  // F8_E5M2
    }
  }
  return count;
}

// ---------------------------------------------------------------------------------------------
// Writing.

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // nbytes of little-endian elements, row-major
  size_t nbytes = 0;
};

namespace detail {

// A safetensors file's layout: the header's little-endian length, the header, and the order in
// which the tensors' data follow it.
struct Layout {
  uint8_t len[8] = {};
  std::string header;
  std::vector<size_t> order;
};

// Deterministic: tensors sorted by name and laid out in that order with no padding, every JSON
// object's keys in byte order, the header padded with spaces to a multiple of 8 bytes. Validates
// everything; errors start with `label`.
inline Expected<Layout> layout(const std::string& label, const std::vector<TensorToWrite>& tensors,
                               const std::vector<std::pair<std::string, std::string>>& metadata) {
  auto fail = [&](const std::string& m) { return Error{label + ": " + m}; };
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });
  std::vector<std::pair<std::string, std::string>> entries;  // key, JSON value
  uint64_t offset = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const TensorToWrite& t = tensors[order[k]];
    const std::string q = "tensor " + detail::quoted(t.name) + ": ";
    if (t.name.empty()) return fail("tensor name is empty");
    if (t.name == "__metadata__") return fail("tensor name '__metadata__' is reserved");
    if (!json::is_valid_utf8(t.name)) return fail(q + "name is not valid UTF-8");
    if (k > 0 && tensors[order[k - 1]].name == t.name)
      return fail("duplicate tensor name " + detail::quoted(t.name));
    for (int64_t d : t.shape) {
      if (d < 0)
        return fail(q + "shape " + detail::shape_string(t.shape) + " has a negative dimension");
    }
    auto numel = detail::element_count(t.shape);
    uint64_t bytes = 0, end = 0;
    if (!numel || detail::mul_overflows(*numel, dtype_size(t.dtype), &bytes)) {
      return fail(q + "byte size of shape " + detail::shape_string(t.shape) + " overflows 64 bits");
    }
    if (bytes != t.nbytes) {
      return fail(q + "has " + std::to_string(t.nbytes) + " bytes but shape " +
                  detail::shape_string(t.shape) + " of " + dtype_name(t.dtype) + " needs " +
                  std::to_string(bytes));
    }
    if (bytes > 0 && !t.data) return fail(q + "data is null");
    if (detail::add_overflows(offset, bytes, &end))
      return fail("total data size overflows 64 bits");
    std::string v = "{\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) +
                    "],\"dtype\":\"" + dtype_name(t.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) v += ',';  // not `"," + ...`: GCC 12's -Wrestrict false positive (bug 105651)
      v += std::to_string(t.shape[i]);
    }
    entries.emplace_back(t.name, v + "]}");
    offset = end;
  }
  if (!metadata.empty()) {
    auto meta = metadata;
    std::sort(meta.begin(), meta.end());
    std::string v = "{";
    for (size_t i = 0; i < meta.size(); ++i) {
      if (!json::is_valid_utf8(meta[i].first) || !json::is_valid_utf8(meta[i].second)) {
        return fail("__metadata__ entry " + detail::quoted(meta[i].first) + " is not valid UTF-8");
      }
      if (i > 0 && meta[i - 1].first == meta[i].first) {
        return fail("__metadata__ has duplicate key " + detail::quoted(meta[i].first));
      }
      if (i) v += ",";
      json::append_quoted(&v, meta[i].first);
      v += ":";
      json::append_quoted(&v, meta[i].second);
    }
    entries.emplace_back("__metadata__", v + "}");
  }
  std::sort(entries.begin(), entries.end());
  std::string header = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) header += ",";
    json::append_quoted(&header, entries[i].first);
    header += ":" + entries[i].second;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > File::kMaxHeaderSize) return fail("header would exceed 100000000 bytes");
  Layout l;
  for (int i = 0; i < 8; ++i)
    l.len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  l.header = std::move(header);
  l.order = std::move(order);
  return l;
}

}  // namespace detail

// Writes a safetensors file deterministically (detail::layout), atomically: PATH.tmp.<pid>,
// renamed when complete.
inline Status write_file(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  auto l = detail::layout(path, tensors, metadata);
  if (!l) return l.error();
  std::vector<std::pair<const void*, size_t>> chunks = {{l->len, 8},
                                                        {l->header.data(), l->header.size()}};
  for (size_t i : l->order) chunks.emplace_back(tensors[i].data, tensors[i].nbytes);
  return detail::write_file_atomic(path, chunks);
}

// The bytes write_file would write, in memory (for File::from_bytes: a module's state_dict read
// as weights without a file).
inline Expected<std::vector<uint8_t>> encode(
    const std::string& label, const std::vector<TensorToWrite>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  auto l = detail::layout(label, tensors, metadata);
  if (!l) return l.error();
  std::vector<uint8_t> out(l->len, l->len + 8);
  out.insert(out.end(), l->header.begin(), l->header.end());
  for (size_t i : l->order) {
    const auto* p = static_cast<const uint8_t*>(tensors[i].data);
    out.insert(out.end(), p, p + tensors[i].nbytes);
  }
  return out;
}

}  // namespace zoc::st
