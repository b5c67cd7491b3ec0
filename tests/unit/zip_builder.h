// Zip archives built byte by byte for the TorchScript archive tests, so that they need neither
// Python nor the reference data: stored records with CRCs left 0 (the archive check verifies the
// CRCs of deflated records only; LibTorch verifies them all, and rejects these, which is what the
// corrupt-record test needs),
// and the smallest pickle the archive check accepts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zoc::test {

using Records = std::vector<std::pair<std::string, std::string>>;

// PROTO 2, EMPTY_TUPLE, STOP: a complete pickle that references no global.
inline const std::string kEmptyTuplePickle = "\x80\x02).";

inline void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The fields a local header and a directory record share, from "version needed" to the name's
// length: stored, no flags, CRC 0.
inline void put_shared_fields(std::string& s, const std::string& name, const std::string& data) {
  put_le(s, 20, 2);
  s.append(12, '\0');  // flags, method, time, date, crc
  put_le(s, data.size(), 4);
  put_le(s, data.size(), 4);
  put_le(s, name.size(), 2);
}

inline std::string make_zip(const Records& records) {
  std::string out, dir;
  for (const auto& [name, data] : records) {
    const uint64_t offset = out.size();
    put_le(out, 0x04034b50, 4);
    put_shared_fields(out, name, data);
    put_le(out, 0, 2);  // extra
    out += name + data;
    put_le(dir, 0x02014b50, 4);
    put_le(dir, 20, 2);  // version made by
    put_shared_fields(dir, name, data);
    dir.append(12, '\0');  // extra, comment, disk, internal and external attributes
    put_le(dir, offset, 4);
    dir += name;
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 4);
  put_le(out, records.size(), 2);
  put_le(out, records.size(), 2);
  put_le(out, dir.size(), 4);
  put_le(out, dir_offset, 4);
  put_le(out, 0, 2);
  return out;
}

}  // namespace zoc::test
