// Reading and checking the zip directory of a `.pt` file (zip_archive.h says what is checked and
// why). Only the end-of-directory records, the directory, each record's local header and data
// descriptor, and the records the caller asks for are read; the file is never mapped whole. The
// checks run in the order that gives the most useful message for a hostile file: names and
// declared sizes from the directory first, then duplicates, then the local headers, then overlap.
#include "compiler/frontend/torchscript/zip_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>

#include <fmt/format.h>

#include "compiler/support/sanitize.h"

namespace zoc::torchscript {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50,
                   kEndOfDirectory = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50,
                   kDataDescriptor = 0x08074b50;
constexpr uint16_t kFlagEncrypted = 0x0001, kFlagDataDescriptor = 0x0008,
                   kFlagStrongEncryption = 0x0040, kFlagMaskedHeaders = 0x2000;
constexpr uint64_t kSaturated32 = 0xFFFFFFFFu;
// The directory is read whole; torch.jit.save writes about 90 bytes per record (a
// traced ResNet-50's is 54 KB for 626 records), so 64 MiB holds over 500,000 records.
constexpr uint64_t kMaxDirectoryBytes = uint64_t{64} << 20;

Error unsafe(const std::string& what) {
  return Error{fmt::format("unsafe zip archive: {}; {}", what, kRefusedBeforeLoading)};
}
Error corrupt(const std::string& what) { return Error{"corrupt zip archive: " + what}; }

struct DirectoryLocation {
  uint64_t count = 0, size = 0, offset = 0;
};

// The end-of-directory record (the last 22 bytes plus a comment of < 64 KiB), and its zip64 form.
Expected<DirectoryLocation> locate_directory(FileReader& r, const std::string& truncated) {
  if (r.size() < 22) return Error{truncated};
  const uint64_t tail_len = std::min<uint64_t>(r.size(), 22 + 65535);
  const uint64_t tail_at = r.size() - tail_len;
  const std::vector<uint8_t> tail = r.read(tail_at, tail_len);
  if (tail.size() != tail_len) return Error{"cannot read the file"};
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i) {
    if (read_le(&tail[i], 4) == kEndOfDirectory &&
        static_cast<uint64_t>(i) + 22 + read_le(&tail[i + 20], 2) == tail_len) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return Error{truncated};
  DirectoryLocation d{read_le(&tail[eocd + 10], 2), read_le(&tail[eocd + 12], 4),
                      read_le(&tail[eocd + 16], 4)};
  const uint64_t eocd_at = tail_at + static_cast<uint64_t>(eocd);
  if (eocd_at >= 20) {
    const std::vector<uint8_t> loc = r.read(eocd_at - 20, 20);
    if (loc.size() == 20 && read_le(loc.data(), 4) == kZip64Locator) {
      const std::vector<uint8_t> z = r.read(read_le(&loc[8], 8), 56);
      if (z.size() != 56 || read_le(z.data(), 4) != kZip64End) {
        return corrupt("its zip64 directory record is missing");
      }
      d = {read_le(&z[32], 8), read_le(&z[40], 8), read_le(&z[48], 8)};
    }
  }
  if (d.offset > eocd_at || d.size > eocd_at - d.offset || d.count > d.size / 46) {
    return Error{fmt::format("{} (its zip directory points outside the file)", truncated)};
  }
  return d;
}

// Applies a zip64 extended-information field (id 1) found in `extra`: each saturated field in
// `fields`, in order, is replaced by the next 8-byte value. Returns whether there was one.
bool apply_zip64(const uint8_t* extra, uint64_t extra_len,
                 std::initializer_list<uint64_t*> fields) {
  for (uint64_t x = 0; x + 4 <= extra_len;) {
    const uint64_t id = read_le(extra + x, 2), len = read_le(extra + x + 2, 2);
    if (x + 4 + len > extra_len) return false;
    if (id == 1) {
      uint64_t at = x + 4;
      for (uint64_t* field : fields) {
        if (*field == kSaturated32 && at + 8 <= x + 4 + len) {
          *field = read_le(extra + at, 8);
          at += 8;
        }
      }
      return true;
    }
    x += 4 + len;
  }
  return false;
}

// One directory record at h, of which `avail` bytes are readable; `used` is its length.
Expected<ZipEntry> parse_central(const uint8_t* h, uint64_t avail, uint64_t& used) {
  if (avail < 46 || read_le(h, 4) != kCentralHeader) return corrupt("its directory is damaged");
  const uint64_t name_len = read_le(h + 28, 2), extra_len = read_le(h + 30, 2),
                 comment_len = read_le(h + 32, 2);
  used = 46 + name_len + extra_len + comment_len;
  if (used > avail) return corrupt("its directory is damaged");
  ZipEntry e;
  e.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
  e.flags = static_cast<uint16_t>(read_le(h + 8, 2));
  e.method = static_cast<uint16_t>(read_le(h + 10, 2));
  e.crc = static_cast<uint32_t>(read_le(h + 16, 4));
  e.compressed = read_le(h + 20, 4);
  e.uncompressed = read_le(h + 24, 4);
  e.local_offset = read_le(h + 42, 4);
  apply_zip64(h + 46 + name_len, extra_len, {&e.uncompressed, &e.compressed, &e.local_offset});
  return e;
}

// A name must stay inside the folder it is extracted to, on any system, and print as itself.
Status check_name(const std::string& name) {
  const std::string q = quoted_name(name);
  if (name.empty()) return unsafe("a record has an empty name");
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      return unsafe(fmt::format("record name '{}' contains the control byte 0x{:02x}{}", q, c,
                                c == 0 ? " (NUL), which ends the name early for C code" : ""));
    }
  }
  if (name.find('\\') != std::string::npos) {
    return unsafe(
        fmt::format("record name '{}' contains a backslash, a folder separator on "
                    "Windows that hides '..' and absolute paths from other checks",
                    q));
  }
  if (name[0] == '/') return unsafe(fmt::format("record name '{}' is an absolute path", q));
  if (name.size() >= 2 && std::isalpha(static_cast<unsigned char>(name[0])) && name[1] == ':') {
    return unsafe(fmt::format("record name '{}' starts with a drive letter", q));
  }
  for (size_t begin = 0; begin < name.size();) {
    const size_t slash = std::min(name.find('/', begin), name.size());
    const std::string part = name.substr(begin, slash - begin);
    if (part == "..") {
      return unsafe(
          fmt::format("record name '{}' has a '..' component, which points outside "
                      "the archive",
                      q));
    }
    if (part.empty() || part == ".") {
      return unsafe(
          fmt::format("record name '{}' has an empty or '.' component, which makes "
                      "one record look like another",
                      q));
    }
    begin = slash + 1;  // a trailing '/' (a folder record) ends the loop
  }
  return Status::success();
}

// What the directory declares: a method LibTorch reads, no encryption, sizes deflate can produce.
Status check_declared(const ZipEntry& e) {
  const std::string q = quoted_name(e.name);
  if (e.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders)) {
    return Error{fmt::format("record '{}' is encrypted; LibTorch cannot read it", q)};
  }
  if (e.method == 0) {
    if (e.compressed != e.uncompressed) {
      return corrupt(
          fmt::format("record '{}' is stored uncompressed, but the directory gives it "
                      "{} bytes stored and {} bytes uncompressed",
                      q, e.compressed, e.uncompressed));
    }
  } else if (e.method == 8) {
    if (e.compressed < UINT64_MAX / kMaxDeflateRatio &&
        e.uncompressed > e.compressed * kMaxDeflateRatio) {
      return unsafe(
          fmt::format("record '{}' declares {} bytes uncompressed from {} compressed "
                      "bytes, more than deflate can expand data ({}:1 at most): a zip "
                      "bomb",
                      q, e.uncompressed, e.compressed, kMaxDeflateRatio));
    }
  } else {
    return Error{
        fmt::format("record '{}' uses compression method {}; LibTorch reads only stored "
                    "and deflated records (methods 0 and 8)",
                    q, e.method)};
  }
  return Status::success();
}

// LibTorch finds records by name ignoring ASCII case, so names equal that way are duplicates.
Status check_duplicates(const std::vector<ZipEntry>& entries) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string key = entries[i].name;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto [it, inserted] = seen.emplace(std::move(key), i);
    if (inserted) continue;
    const std::string& first = entries[it->second].name;
    if (first == entries[i].name) {
      return unsafe(
          fmt::format("record '{}' appears twice in the zip directory (records {} and "
                      "{}), so zoc cannot tell which copy LibTorch would read",
                      quoted_name(first), it->second + 1, i + 1));
    }
    return unsafe(
        fmt::format("records '{}' and '{}' differ only in letter case, and LibTorch, "
                    "which finds records ignoring case, cannot tell them apart",
                    quoted_name(first), quoted_name(entries[i].name)));
  }
  return Status::success();
}

// The declared sizes of the compressed records, each and in all, before any is inflated.
Status check_inflated_total(const std::vector<ZipEntry>& entries) {
  uint64_t total = 0;
  for (const ZipEntry& e : entries) {
    if (e.method != 8) continue;
    if (e.uncompressed > kMaxInflatedTotal) {
      return unsafe(
          fmt::format("record '{}' declares {} bytes uncompressed, more than the {} MiB zoc "
                      "inflates in all (LibTorch allocates a record's declared size before "
                      "reading it; the code and debug information of a traced ResNet-50 take "
                      "0.35 MiB): a zip bomb",
                      quoted_name(e.name), e.uncompressed, kMaxInflatedTotal >> 20));
    }
    total += e.uncompressed;  // each at most 64 MiB, and fewer than 2^40 records
  }
  if (total <= kMaxInflatedTotal) return Status::success();
  return unsafe(
      fmt::format("its compressed records declare more than {} MiB uncompressed in "
                  "all (LibTorch allocates each declared size before reading a record; "
                  "the code and debug information of a traced ResNet-50 take 0.35 MiB): "
                  "a zip bomb",
                  kMaxInflatedTotal >> 20));
}

// The data descriptor after a record's data (flag bit 3): an optional signature, the CRC and
// both sizes in 4 or 8 bytes each, which must repeat the directory's. Returns its length.
Expected<uint64_t> check_descriptor(FileReader& r, const ZipEntry& e, uint64_t data_end,
                                    uint64_t limit) {
  const std::vector<uint8_t> d = r.read(data_end, std::min<uint64_t>(limit - data_end, 24));
  const uint64_t start = d.size() >= 4 && read_le(d.data(), 4) == kDataDescriptor ? 4 : 0;
  for (int width : {4, 8}) {
    const uint64_t len = start + 4 + 2 * static_cast<uint64_t>(width);
    if (len > d.size()) continue;
    if (read_le(&d[start], 4) == e.crc && read_le(&d[start + 4], width) == e.compressed &&
        read_le(&d[start + 4 + width], width) == e.uncompressed) {
      return len;
    }
  }
  return corrupt(
      fmt::format("the data descriptor after record '{}' (byte {}) does not repeat its "
                  "CRC and sizes from the zip directory",
                  quoted_name(e.name), data_end));
}

// The record's local header says what the directory says, and its data ends before `limit` (the
// directory). Sets data_offset and end.
Status check_local(FileReader& r, ZipEntry& e, uint64_t limit) {
  const std::string q = quoted_name(e.name);
  const std::vector<uint8_t> h =
      e.local_offset < limit ? r.read(e.local_offset, 30) : std::vector<uint8_t>{};
  if (h.size() != 30 || read_le(h.data(), 4) != kLocalHeader) {
    return corrupt(
        fmt::format("record '{}' has no local header at byte {}, where the zip "
                    "directory says it starts",
                    q, e.local_offset));
  }
  const uint64_t name_len = read_le(&h[26], 2), extra_len = read_le(&h[28], 2);
  e.data_offset = e.local_offset + 30 + name_len + extra_len;
  const std::vector<uint8_t> var = r.read(e.local_offset + 30, name_len + extra_len);
  if (e.data_offset > limit || var.size() != name_len + extra_len) {
    return corrupt(fmt::format("the local header of record '{}' runs into the zip directory", q));
  }
  const std::string local_name(var.begin(), var.begin() + static_cast<int64_t>(name_len));
  if (local_name != e.name) {
    return unsafe(
        fmt::format("record '{}' is called '{}' in its local header, so readers that "
                    "trust one or the other see different files",
                    q, quoted_name(local_name)));
  }
  const uint64_t flags = read_le(&h[6], 2), method = read_le(&h[8], 2);
  if (method != e.method || ((flags ^ e.flags) & kFlagDataDescriptor)) {
    return corrupt(
        fmt::format("the local header of record '{}' disagrees with the zip "
                    "directory about how the record is stored",
                    q));
  }
  if (e.compressed > limit - e.data_offset) {
    return corrupt(
        fmt::format("record '{}' runs past the end of the archive's records: its {} "
                    "bytes start at byte {}, and the zip directory starts at byte {}",
                    q, e.compressed, e.data_offset, limit));
  }
  const uint64_t data_end = e.data_offset + e.compressed;
  uint64_t crc = read_le(&h[14], 4), compressed = read_le(&h[18], 4),
           uncompressed = read_le(&h[22], 4);
  apply_zip64(var.data() + name_len, extra_len, {&uncompressed, &compressed});
  const bool zero = crc == 0 && compressed == 0 && uncompressed == 0;
  const bool same = crc == e.crc && compressed == e.compressed && uncompressed == e.uncompressed;
  // With a data descriptor the local header's CRC and sizes are zero (or already right).
  if (!same && !((flags & kFlagDataDescriptor) && zero)) {
    return corrupt(
        fmt::format("the local header of record '{}' gives {} bytes ({} "
                    "uncompressed), the zip directory {} ({} uncompressed)",
                    q, compressed, uncompressed, e.compressed, e.uncompressed));
  }
  e.end = data_end;
  if (flags & kFlagDataDescriptor) {
    ZOC_ASSIGN_OR_RETURN(const uint64_t len, check_descriptor(r, e, data_end, limit));
    e.end += len;
  }
  return Status::success();
}

// Records must not share bytes: overlapping records are how small files expand enormously.
Status check_overlaps(const std::vector<ZipEntry>& entries) {
  std::vector<const ZipEntry*> order;
  for (const ZipEntry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->local_offset < b->local_offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->local_offset >= order[i - 1]->end) continue;
    return unsafe(
        fmt::format("records '{}' (bytes {} to {}) and '{}' (from byte {}) overlap: a "
                    "zip bomb trick that makes the same bytes count several times",
                    quoted_name(order[i - 1]->name), order[i - 1]->local_offset, order[i - 1]->end,
                    quoted_name(order[i]->name), order[i]->local_offset));
  }
  return Status::success();
}

// Inflates record e, keeping the output only if `keep`, and checks that it gives exactly its
// declared size and CRC: LibTorch's reader (miniz) inflates into a buffer of the declared size, so
// a record that inflates to more is a bomb it would have to stop, and one that differs otherwise
// is damaged. The declared sizes are bounded (check_inflated_total), so the work is too.
Expected<std::string> inflate_record(FileReader& r, const ZipEntry& e, bool keep) {
  const std::string q = quoted_name(e.name);
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return Error{"cannot inflate: out of memory"};
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::vector<uint8_t> in, out(1 << 16);
  std::string kept;
  uint64_t read = 0, produced = 0;
  uLong crc = crc32(0, nullptr, 0);
  int rc = Z_OK;
  while (rc == Z_OK && produced <= e.uncompressed) {
    if (z.avail_in == 0 && read < e.compressed) {
      in = r.read(e.data_offset + read, std::min(kChunk, e.compressed - read));
      if (in.empty()) break;
      read += in.size();
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(in.size());
    }
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    const uint64_t n = out.size() - z.avail_out;
    crc = crc32(crc, out.data(), static_cast<uInt>(n));
    produced += n;
    if (keep && produced <= e.uncompressed) kept.append(out.begin(), out.begin() + n);
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && read >= e.compressed) break;  // input ran out
    if (rc == Z_BUF_ERROR) rc = Z_OK;  // no progress possible this round; more input comes
  }
  const std::string why = z.msg ? z.msg : "it ends early";
  inflateEnd(&z);
  if (produced > e.uncompressed) {
    return unsafe(fmt::format("record '{}' inflates to more than the {} bytes it declares", q,
                              e.uncompressed));
  }
  if (rc != Z_STREAM_END) {
    return corrupt(fmt::format("record '{}' is not valid deflate data: {}", q, why));
  }
  if (produced != e.uncompressed) {
    return corrupt(fmt::format("record '{}' inflates to {} bytes, not the {} it declares", q,
                               produced, e.uncompressed));
  }
  if (crc != e.crc) {
    return corrupt(fmt::format("record '{}' does not match the CRC the zip directory gives it", q));
  }
  return kept;
}

Expected<int> open_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error{fmt::format("cannot open the file: {}", std::strerror(errno))};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd);
    const char* what = S_ISDIR(mode)    ? "a directory"
                       : S_ISFIFO(mode) ? "a named pipe (FIFO)"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                       : S_ISSOCK(mode) ? "a socket"
                                        : "not readable as a file";
    return Error{
        fmt::format("cannot read it: it is {}, not a regular file; zoc reads TorchScript "
                    "models only from regular files",
                    what)};
  }
  return fd;
}

}  // namespace

Status FileReader::open(const std::string& path) {
  ZOC_ASSIGN_OR_RETURN(fd_, open_regular_file(path));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Error{"cannot read the file"};
  size_ = static_cast<uint64_t>(st.st_size);
  device_ = static_cast<uint64_t>(st.st_dev);
  inode_ = static_cast<uint64_t>(st.st_ino);
  return Status::success();
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<uint8_t> FileReader::read(uint64_t offset, uint64_t n) {
  if (fd_ < 0 || offset > size_ || n > size_ - offset || n == 0) return {};
  std::vector<uint8_t> buf(n);
  for (uint64_t done = 0; done < n;) {
    const ssize_t got =
        ::pread(fd_, buf.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return {};  // an error, or the file shrank
    done += static_cast<uint64_t>(got);
  }
  return buf;
}

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string quoted_name(const std::string& name) { return sanitize_comment(name); }

Expected<std::vector<ZipEntry>> read_zip_directory(FileReader& r, const std::string& truncated) {
  ZOC_ASSIGN_OR_RETURN(const DirectoryLocation d, locate_directory(r, truncated));
  if (d.size > kMaxDirectoryBytes) {
    return unsafe(
        fmt::format("its zip directory is {} bytes long, more than the {} MiB zoc reads "
                    "(over 500,000 records)",
                    d.size, kMaxDirectoryBytes >> 20));
  }
  const std::vector<uint8_t> dir = r.read(d.offset, d.size);
  if (dir.size() != d.size) return corrupt("its directory is damaged");
  std::vector<ZipEntry> entries;
  for (uint64_t pos = 0, k = 0; k < d.count; ++k) {
    uint64_t used = 0;
    ZOC_ASSIGN_OR_RETURN(ZipEntry e, parse_central(dir.data() + pos, dir.size() - pos, used));
    ZOC_TRY(check_name(e.name));
    ZOC_TRY(check_declared(e));
    entries.push_back(std::move(e));
    pos += used;
  }
  ZOC_TRY(check_duplicates(entries));
  ZOC_TRY(check_inflated_total(entries));
  for (ZipEntry& e : entries) ZOC_TRY(check_local(r, e, d.offset));
  ZOC_TRY(check_overlaps(entries));
  for (const ZipEntry& e : entries) {
    if (e.method == 8) ZOC_TRY(inflate_record(r, e, /*keep=*/false));
  }
  return entries;
}

Expected<std::string> read_zip_entry(FileReader& r, const ZipEntry& e, uint64_t max_bytes) {
  if (e.uncompressed > max_bytes || e.compressed > max_bytes + max_bytes / 8 + 1024) {
    return Error{fmt::format("record '{}' is {} bytes long, more than the {} bytes zoc reads of it",
                             quoted_name(e.name), std::max(e.uncompressed, e.compressed),
                             max_bytes)};
  }
  if (e.method == 8) return inflate_record(r, e, /*keep=*/true);
  std::vector<uint8_t> data = r.read(e.data_offset, e.compressed);
  if (data.size() != e.compressed) return Error{"cannot read the file"};
  return std::string(data.begin(), data.end());
}

}  // namespace zoc::torchscript
