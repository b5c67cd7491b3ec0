// The zip layer of a `.pt` file, read and checked without LibTorch: every record of the zip
// directory, with the checks that make a hostile archive harmless before LibTorch opens it.
// LibTorch's zip reader (miniz) trusts the archive: it allocates a record's declared size before
// reading it, finds names ignoring case, and takes whichever copy of a duplicated name its
// sorted index meets first. So zoc checks the structure itself: every name (no '..', no absolute
// path, no backslash, no control byte), no two names LibTorch would confuse, local headers that
// agree with the directory, records that lie inside the file without overlapping, only the
// compression methods LibTorch reads, and declared sizes that a real archive can have (the zip
// bomb limits below). The zip format is read by hand, as far as these checks need. Debian's
// libzip and minizip were weighed: zoc would still need its own name, duplicate and size rules
// on top of either, and neither says which check failed in terms a user can act on (libzip 1.7's
// consistency check ends in one error code; minizip compares a local header only when a record
// is opened). PyTorch's archives only store or deflate records, so the one library needed is
// zlib, for inflating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc::torchscript {

// Reads byte ranges of a regular file without mapping it whole (a `.pt` file may hold
// gigabytes). The file is opened without blocking and checked to be a regular file before
// anything is read: a named pipe or a device with a `.pt` name would otherwise block zoc in
// open() or never end.
class FileReader {
 public:
  FileReader() = default;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();
  // Opens `path`; the error says why it cannot be read ("it is a named pipe (FIFO), not a
  // regular file", "No such file or directory").
  Status open(const std::string& path);
  uint64_t size() const { return size_; }
  // Which file this is, so that a later reader can check it reads the same one.
  uint64_t device() const { return device_; }
  uint64_t inode() const { return inode_; }
  // [offset, offset + n), or an empty vector if that is not inside the file.
  std::vector<uint8_t> read(uint64_t offset, uint64_t n);

 private:
  int fd_ = -1;
  uint64_t size_ = 0, device_ = 0, inode_ = 0;
};

// Little-endian integer of `bytes` bytes at p.
uint64_t read_le(const uint8_t* p, int bytes);

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc = 0;
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t local_offset = 0;  // its local header
  uint64_t data_offset = 0;   // its data, after the local header
  uint64_t end = 0;           // one past its data and data descriptor
};

// Limits against zip bombs. Deflate cannot expand data more than 1032 times (a 258-byte match
// costs at least two bits), so a larger declared ratio is a lie. Compressed records in TorchScript
// archives are code and debug information (358 KB in all for a traced ResNet-50, ratio 4); tensor
// data is stored, so its size is bounded by the file. LibTorch allocates a record's declared size
// before inflating it, so the declared sizes of all compressed records together (each one's too)
// are capped at 64 MiB, 180 times that ResNet's, and every compressed record is inflated once,
// without keeping the output, to check that it gives exactly its declared size and CRC.
inline constexpr uint64_t kMaxDeflateRatio = 1032;
inline constexpr uint64_t kMaxInflatedTotal = uint64_t{64} << 20;

// The suffix of every refusal that protects the reader, and says that nothing was loaded.
inline constexpr const char* kRefusedBeforeLoading =
    "torch.jit.save never writes this; zoc refused the file before loading any of it";

// Reads the zip directory and checks every record as described above (which inflates every
// compressed record once). `truncated` is the
// message for a file whose end (the directory) is missing or points outside it. Records come in
// directory order.
Expected<std::vector<ZipEntry>> read_zip_directory(FileReader& file, const std::string& truncated);

// The contents of one record of a checked directory (inflated if deflated), if they are at most
// `max_bytes` long.
Expected<std::string> read_zip_entry(FileReader& file, const ZipEntry& entry, uint64_t max_bytes);

// A record name as messages quote it: control bytes and backslashes escaped.
std::string quoted_name(const std::string& name);

}  // namespace zoc::torchscript
