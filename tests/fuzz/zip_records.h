// The records of a zip archive as names and contents, read from bytes and written back, for the
// TorchScript fuzz target's mutator (fuzz_torchscript.cpp).
//
// Mutating a `.pt` file's bytes mostly breaks its zip layer: a changed byte of a deflated code
// record fails its CRC, and the archive check refuses it before anything reads the code. Reading
// the records, mutating one record's contents and writing the archive again with its sizes and
// CRC right lets mutations reach what reads the records: the pickle scan, the code check, and in
// a build with LibTorch, LibTorch's compiler of the code and zoc's translator. The reader takes
// what a plain zip holds (no zip64, no encryption) and gives up on anything else; the writer
// writes what torch.jit.save does, less its data descriptors and alignment padding.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zoc::fuzz {

struct ZipRecord {
  std::string name;
  std::string data;  // inflated
  bool deflated = false;
};

namespace zip_detail {

inline uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void put(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// Raw deflate (no zlib header) in or out; nullopt for data that does not inflate within `limit`.
inline std::optional<std::string> inflate_raw(const uint8_t* p, size_t n, size_t limit) {
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out(limit, '\0');
  z.next_in = const_cast<uint8_t*>(p);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

inline std::string deflate_raw(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace zip_detail

// The records of the zip archive `p` (their data inflated, each at most `limit` bytes), or
// nullopt if it is not a plain zip archive with at most 4096 stored or deflated records.
inline std::optional<std::vector<ZipRecord>> read_zip_records(const uint8_t* p, size_t n,
                                                              size_t limit) {
  using zip_detail::le;
  if (n < 22) return std::nullopt;
  size_t eocd = n - 22;
  while (eocd > 0 && le(p + eocd, 4) != 0x06054b50) --eocd;
  if (le(p + eocd, 4) != 0x06054b50) return std::nullopt;
  const uint64_t count = le(p + eocd + 10, 2), dir_size = le(p + eocd + 12, 4);
  uint64_t at = le(p + eocd + 16, 4);
  if (count > 4096 || at > eocd || dir_size > eocd - at) return std::nullopt;
  std::vector<ZipRecord> records;
  for (uint64_t k = 0; k < count; ++k) {
    if (at + 46 > eocd || le(p + at, 4) != 0x02014b50) return std::nullopt;
    const uint64_t method = le(p + at + 10, 2), size = le(p + at + 20, 4),
                   name_len = le(p + at + 28, 2), extra = le(p + at + 30, 2),
                   comment = le(p + at + 32, 2), local = le(p + at + 42, 4);
    if ((method != 0 && method != 8) || at + 46 + name_len > eocd || local + 30 > n) {
      return std::nullopt;
    }
    ZipRecord r;
    r.name.assign(reinterpret_cast<const char*>(p + at + 46), name_len);
    r.deflated = method == 8;
    const uint64_t data = local + 30 + le(p + local + 26, 2) + le(p + local + 28, 2);
    if (data > n || size > n - data) return std::nullopt;
    if (r.deflated) {
      auto inflated = zip_detail::inflate_raw(p + data, size, limit);
      if (!inflated) return std::nullopt;
      r.data = std::move(*inflated);
    } else {
      if (size > limit) return std::nullopt;
      r.data.assign(reinterpret_cast<const char*>(p + data), size);
    }
    records.push_back(std::move(r));
    at += 46 + name_len + extra + comment;
  }
  return records;
}

// The archive of `records`, each with its right sizes and CRC.
inline std::string write_zip_records(const std::vector<ZipRecord>& records) {
  using zip_detail::put;
  std::string out, dir;
  for (const ZipRecord& r : records) {
    const std::string stored = r.deflated ? zip_detail::deflate_raw(r.data) : r.data;
    const uint64_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(r.data.data()), static_cast<uInt>(r.data.size()));
    std::string shared;  // from "version needed" to the name's length, as both headers hold it
    put(shared, 20, 2);
    put(shared, 0, 2);  // flags
    put(shared, r.deflated ? 8 : 0, 2);
    put(shared, 0, 4);  // time, date
    put(shared, crc, 4);
    put(shared, stored.size(), 4);
    put(shared, r.data.size(), 4);
    put(shared, r.name.size(), 2);
    const uint64_t offset = out.size();
    put(out, 0x04034b50, 4);
    out += shared;
    put(out, 0, 2);  // extra
    out += r.name + stored;
    put(dir, 0x02014b50, 4);
    put(dir, 20, 2);  // version made by
    dir += shared;
    dir.append(12, '\0');  // extra, comment, disk, internal and external attributes
    put(dir, offset, 4);
    dir += r.name;
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);  // disk numbers
  put(out, records.size(), 2);
  put(out, records.size(), 2);
  put(out, dir.size(), 4);
  put(out, dir_offset, 4);
  put(out, 0, 2);  // comment
  return out;
}

}  // namespace zoc::fuzz
