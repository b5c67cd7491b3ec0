// The file-system operations with which zoc writes an output folder, each reporting the
// system's reason when it fails ("No space left on device", not "cannot write").
//
// Every change zoc makes to the file system while writing a folder goes through one Changes
// object. That is what lets a test stop the write after any number of changes, exactly as a
// SIGKILL between two system calls would (nothing after the stop runs, cleanup included), and
// then prove that the next run recovers from that instant: write_folder_test walks every one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "zoc/core/expected.h"

namespace zoc::folder {

namespace fs = std::filesystem;

// What is at a path, not following a final symbolic link. kOther: a link, pipe, socket or
// device, or an entry zoc cannot inspect.
enum class Kind { kAbsent, kFile, kFolder, kOther };
Kind kind_of(const fs::path& p);

// A file's content as the stamp and the journal record it.
struct FileId {
  std::string sha256;  // 64 lowercase hex digits
  uint64_t size = 0;
  bool operator==(const FileId& o) const { return size == o.size && sha256 == o.sha256; }
};
FileId id_of(std::string_view text);

// Whether `p` is a regular file (not a link to one) holding exactly `id`. The size is compared
// first, so a large file that cannot match is not read.
bool holds(const fs::path& p, const FileId& id);

// The text of the regular file `p` (not a link, not a pipe), at most `max_bytes` long.
Expected<std::string> read_small_file(const fs::path& p, size_t max_bytes);

// Whether every folder between `root` and `rel`'s last component is a real folder (no link, no
// file): then `root / rel` names something inside `root`, and zoc may act on it.
bool inside(const fs::path& root, const fs::path& rel);

// The message of the error a Changes object returns once its test budget is spent.
inline constexpr const char* kStoppedMessage = "stopped as if killed (test)";

class Changes {
 public:
  // stop_after < 0: no limit. Otherwise the first `stop_after` changes happen and every later
  // one returns kStoppedMessage without touching anything.
  explicit Changes(long stop_after = -1) : budget_(stop_after) {}

  bool stopped() const { return stopped_; }

  // Creates `p` (it must not exist) holding `text`; two changes, so that a stop can leave a
  // partly written file as a kill can.
  Status write_file(const fs::path& p, std::string_view text);
  Status rename(const fs::path& from, const fs::path& to);  // rename(2): atomic, replaces
  Status make_folder(const fs::path& p);                    // an existing folder is fine
  Status remove_file(const fs::path& p);                    // an absent file is fine
  // rmdir(2): false (and no error) when the folder is not empty.
  Expected<bool> remove_empty_folder(const fs::path& p);

 private:
  Status step();

  long budget_;
  bool stopped_ = false;
};

// An exclusive lock on a folder (flock(2) on it), held while the object lives and released by
// the kernel when the process dies, so a killed zoc never leaves a stale lock.
class FolderLock {
 public:
  static Expected<FolderLock> acquire(const fs::path& dir, int timeout_seconds);
  FolderLock(FolderLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FolderLock& operator=(FolderLock&&) = delete;
  ~FolderLock();

 private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_;
};

// strerror(3) for `err`, for messages.
std::string errno_text(int err);

// `p` for a message: quoted, control bytes escaped, so a name from a file cannot forge output.
std::string shown(const fs::path& p);

}  // namespace zoc::folder
