// File-system operations for writing an output folder (see folder_ops.h for why they are one
// object): POSIX calls, so every failure carries errno's text.
#include "compiler/driver/folder_ops.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "compiler/support/sanitize.h"
#include "compiler/support/sha256.h"

namespace zoc::folder {

std::string errno_text(int err) { return std::strerror(err); }

std::string shown(const fs::path& p) { return "'" + sanitize_comment(p.string()) + "'"; }

Kind kind_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    return errno == ENOENT || errno == ENOTDIR ? Kind::kAbsent : Kind::kOther;
  }
  if (S_ISREG(st.st_mode)) return Kind::kFile;
  if (S_ISDIR(st.st_mode)) return Kind::kFolder;
  return Kind::kOther;
}

FileId id_of(std::string_view text) { return {sha256_hex(text), text.size()}; }

bool holds(const fs::path& p, const FileId& id) {
  // O_NONBLOCK: a pipe put where a file was must not hang zoc; fstat then refuses it.
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool same =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == id.size;
  if (same) {
    Sha256 h;
    char buf[1 << 16];
    uint64_t total = 0;
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        same = false;
        break;
      }
      h.update(std::string_view(buf, static_cast<size_t>(n)));
      total += static_cast<uint64_t>(n);
    }
    same = same && total == id.size && h.hex() == id.sha256;
  }
  ::close(fd);
  return same;
}

Expected<std::string> read_small_file(const fs::path& p, size_t max_bytes) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot read {}: {}", shown(p), errno_text(errno))};
  struct stat st {};
  std::string text;
  int err = 0;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    err = EINVAL;
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    err = EFBIG;
  } else {
    char buf[1 << 16];
    for (ssize_t n; text.size() <= max_bytes && (n = ::read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        err = errno;
        break;
      }
      text.append(buf, static_cast<size_t>(n));
    }
    if (!err && text.size() > max_bytes) err = EFBIG;
  }
  ::close(fd);
  if (err) return Error{fmt::format("cannot read {}: {}", shown(p), errno_text(err))};
  return text;
}

bool inside(const fs::path& root, const fs::path& rel) {
  fs::path at = root;
  const fs::path parent = rel.parent_path();
  for (const fs::path& part : parent) {
    at /= part;
    if (kind_of(at) != Kind::kFolder) return false;
  }
  return true;
}

Status Changes::step() {
  if (budget_ == 0) stopped_ = true;
  if (stopped_) return Error{kStoppedMessage};
  if (budget_ > 0) --budget_;
  return Status::success();
}

Status Changes::write_file(const fs::path& p, std::string_view text) {
  if (Status s = step(); !s) return s;
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return Error{fmt::format("cannot create {}: {}", shown(p), errno_text(errno))};
  auto put = [&](std::string_view part) -> int {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno;
      part.remove_prefix(static_cast<size_t>(n));
    }
    return 0;
  };
  int err = put(text.substr(0, text.size() / 2));
  Status stop = err ? Status::success() : step();  // a kill may land half way through a file
  if (!err && stop) err = put(text.substr(text.size() / 2));
  if (::close(fd) != 0 && !err && stop) err = errno;  // NFS and full disks report here too
  if (!stop) return stop;
  if (err) return Error{fmt::format("cannot write {}: {}", shown(p), errno_text(err))};
  return Status::success();
}

Status Changes::rename(const fs::path& from, const fs::path& to) {
  if (Status s = step(); !s) return s;
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Error{
        fmt::format("cannot move {} to {}: {}", shown(from), shown(to), errno_text(errno))};
  }
  return Status::success();
}

Status Changes::make_folder(const fs::path& p) {
  if (Status s = step(); !s) return s;
  if (::mkdir(p.c_str(), 0777) != 0 && !(errno == EEXIST && kind_of(p) == Kind::kFolder)) {
    return Error{fmt::format("cannot create the folder {}: {}", shown(p), errno_text(errno))};
  }
  return Status::success();
}

Status Changes::remove_file(const fs::path& p) {
  if (Status s = step(); !s) return s;
  if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
    return Error{fmt::format("cannot delete {}: {}", shown(p), errno_text(errno))};
  }
  return Status::success();
}

Expected<bool> Changes::remove_empty_folder(const fs::path& p) {
  if (Status s = step(); !s) return s.error();
  if (::rmdir(p.c_str()) == 0 || errno == ENOENT) return true;
  if (errno == ENOTEMPTY || errno == EEXIST) return false;
  return Error{fmt::format("cannot remove the folder {}: {}", shown(p), errno_text(errno))};
}

Expected<FolderLock> FolderLock::acquire(const fs::path& dir, int timeout_seconds) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Error{fmt::format("cannot open {} to lock it: {}", shown(dir), errno_text(errno))};
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL) break;  // no locks here
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return Error{fmt::format("cannot lock {}: {}", shown(dir), errno_text(err))};
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::close(fd);
      return Error{fmt::format(
          "another zoc has been writing into {} for {} s (it holds the folder's lock); wait for "
          "it to finish, or stop it",
          shown(dir), timeout_seconds)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return FolderLock(fd);
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace zoc::folder
