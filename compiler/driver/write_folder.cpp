// Atomic folder output (see write_folder.h).
#include "compiler/driver/write_folder.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace zoc {
namespace fs = std::filesystem;

Status write_folder_atomically(const std::string& dir,
                               const std::vector<cudnn::GeneratedFile>& files) {
  const fs::path target = fs::path(dir).lexically_normal();
  if (target.empty() || target.filename().empty()) {
    return Error{fmt::format("invalid output folder '{}'", dir)};
  }
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tmp.{}", target.filename().string(), getpid());
  const fs::path old = target.parent_path() / fmt::format(".{}.old.{}", target.filename().string(), getpid());
  std::error_code ec;
  if (!target.parent_path().empty() && !fs::is_directory(target.parent_path(), ec)) {
    return Error{fmt::format("{}: the parent folder does not exist", dir)};
  }
  if (fs::exists(target, ec) && !fs::is_directory(target, ec)) {
    return Error{fmt::format("{}: exists and is not a folder", dir)};
  }
  fs::remove_all(tmp, ec);
  auto fail = [&](const std::string& why) {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
    return Error{fmt::format("{}: {}", dir, why)};
  };
  if (!fs::create_directory(tmp, ec)) return fail("cannot create a temporary folder: " + ec.message());
  for (const cudnn::GeneratedFile& f : files) {
    const fs::path rel(f.path);
    if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0) {
      return fail(fmt::format("refusing to write outside the folder: '{}'", f.path));
    }
    const fs::path p = tmp / rel;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << f.text;
    out.close();
    if (!out) return fail(fmt::format("cannot write '{}'", f.path));
  }
  const bool had_old = fs::exists(target, ec);
  if (had_old) {
    fs::rename(target, old, ec);
    if (ec) return fail("cannot move the previous output aside: " + ec.message());
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    if (had_old) fs::rename(old, target, ignore);
    return fail("cannot move the new output into place: " + ec.message());
  }
  if (had_old) fs::remove_all(old, ec);
  return Status::success();
}

}  // namespace zoc
