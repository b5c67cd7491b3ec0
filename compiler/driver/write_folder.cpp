// Atomic folder output that never deletes what zoc did not write (see write_folder.h).
#include "compiler/driver/write_folder.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace zoc {
namespace {
namespace fs = std::filesystem;

bool is_safe_relative(const fs::path& rel) {
  if (rel.empty() || rel.is_absolute()) return false;
  for (const fs::path& part : rel.lexically_normal()) {
    if (part == "..") return false;
  }
  return true;
}

std::string stamp_text(const std::vector<cudnn::GeneratedFile>& files) {
  std::string s =
      "# This folder was written by zoc. `zoc compile -o` may replace the files listed below;\n"
      "# anything else in the folder is kept. Do not edit this list.\n";
  for (const cudnn::GeneratedFile& f : files) s += fs::path(f.path).lexically_normal().string() + "\n";
  return s;
}

// The files a stamp lists, or nothing when `dir` holds no stamp (then zoc did not write it).
std::optional<std::set<std::string>> read_stamp(const fs::path& dir) {
  std::error_code ec;
  const fs::path stamp = dir / kFolderStamp;
  if (!fs::is_regular_file(fs::symlink_status(stamp, ec))) return std::nullopt;
  std::ifstream in(stamp);
  if (!in) return std::nullopt;
  std::set<std::string> listed{kFolderStamp};
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || !is_safe_relative(line)) continue;
    listed.insert(fs::path(line).lexically_normal().string());
  }
  return listed;
}

// Whether `a` is `b` or a folder containing it (both absolute and normal).
bool contains(const fs::path& a, const fs::path& b) {
  auto bi = b.begin();
  for (auto ai = a.begin(); ai != a.end(); ++ai, ++bi) {
    if (bi == b.end() || *ai != *bi) return false;
  }
  return true;
}

// The absolute destination, after refusing paths zoc must never replace.
Expected<fs::path> resolve_target(const std::string& dir) {
  if (dir.empty()) return Error{"no output folder given"};
  std::error_code ec;
  fs::path target = fs::absolute(dir, ec).lexically_normal();
  if (ec) return Error{"cannot resolve the output folder: " + ec.message()};
  if (!target.has_filename()) target = target.parent_path();  // "out/" names "out"
  const fs::path cwd = fs::current_path(ec);
  const fs::path real = fs::weakly_canonical(target, ec);
  if (!ec && !cwd.empty() && (contains(target, cwd) || contains(real, cwd))) {
    return Error{"is the current folder or contains it; zoc writes the generated code into a "
                 "folder of its own: name a new one (for example -o out/model)"};
  }
  const fs::file_status st = fs::symlink_status(target, ec);
  if (fs::is_symlink(st)) {
    const fs::path to = fs::read_symlink(target, ec);
    return Error{fmt::format("is a symbolic link (to '{}'); zoc neither replaces a link nor "
                             "writes through one: give the real folder's path",
                             to.string())};
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    return Error{"exists and is not a folder; zoc writes a folder here and will not replace a file"};
  }
  return target;
}

// Entries of `target` (relative paths) that the stamp `listed` does not name: the user's,
// which the new output must keep. A folder holding listed files is entered; any other entry
// is one item (a user's build folder moves as a whole).
void unlisted_entries(const fs::path& target, const fs::path& rel,
                      const std::set<std::string>& listed, std::vector<fs::path>& out) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(target / rel, ec)) {
    const fs::path r = (rel / e.path().filename()).lexically_normal();
    if (listed.count(r.string())) continue;
    const std::string prefix = r.string() + "/";
    const auto it = listed.lower_bound(prefix);
    const bool holds_listed = it != listed.end() && it->rfind(prefix, 0) == 0;
    if (holds_listed && fs::is_directory(e.symlink_status(ec))) {
      unlisted_entries(target, r, listed, out);
    } else {
      out.push_back(r);
    }
  }
}

std::string quoted_list(const std::vector<fs::path>& paths) {
  std::string s;
  for (size_t i = 0; i < paths.size() && i < 3; ++i) {
    s += fmt::format("{}'{}'", i ? ", " : "", paths[i].string());
  }
  if (paths.size() > 3) s += fmt::format(" and {} more", paths.size() - 3);
  return s;
}

// What an existing folder's contents mean for the write: the entries to carry over into the
// new output (its user's files), or an error refusing to touch it.
Expected<std::vector<fs::path>> entries_to_keep(const fs::path& target,
                                                const std::vector<cudnn::GeneratedFile>& files,
                                                const WriteFolderOptions& options) {
  std::vector<fs::path> keep;
  std::error_code ec;
  if (!fs::exists(target, ec)) return keep;
  const std::optional<std::set<std::string>> listed = read_stamp(target);
  if (!listed) {
    std::vector<fs::path> entries;
    unlisted_entries(target, "", {}, entries);
    if (entries.empty() || options.force) return keep;  // --force: replaced as a whole
    std::sort(entries.begin(), entries.end());
    return Error{fmt::format(
        "refusing to replace this folder: zoc did not write it (it has no {} stamp) and it holds "
        "{} entr{} ({}); name a new folder, or pass --force to replace it with everything in it",
        kFolderStamp, entries.size(), entries.size() == 1 ? "y" : "ies", quoted_list(entries))};
  }
  unlisted_entries(target, "", *listed, keep);
  std::sort(keep.begin(), keep.end());
  std::vector<fs::path> clashes;
  for (const fs::path& k : keep) {
    for (const cudnn::GeneratedFile& f : files) {
      const fs::path p = fs::path(f.path).lexically_normal();
      if (contains(k, p) || contains(p, k)) {
        clashes.push_back(k);
        break;
      }
    }
  }
  if (!clashes.empty() && !options.force) {
    return Error{fmt::format("refusing to replace {}: zoc did not write {} and the new output "
                             "needs {}; move {} away, or pass --force to replace {}",
                             quoted_list(clashes), clashes.size() == 1 ? "it" : "them",
                             clashes.size() == 1 ? "its name" : "their names",
                             clashes.size() == 1 ? "it" : "them",
                             clashes.size() == 1 ? "it" : "them")};
  }
  keep.erase(std::remove_if(keep.begin(), keep.end(),
                            [&](const fs::path& k) {
                              return std::find(clashes.begin(), clashes.end(), k) != clashes.end();
                            }),
             keep.end());
  return keep;
}

Status write_files(const fs::path& tmp, const std::vector<cudnn::GeneratedFile>& files) {
  std::vector<cudnn::GeneratedFile> all = files;
  all.push_back({kFolderStamp, stamp_text(files)});
  for (const cudnn::GeneratedFile& f : all) {
    if (!is_safe_relative(f.path)) {
      return Error{fmt::format("refusing to write outside the folder: '{}'", f.path)};
    }
    const fs::path p = tmp / f.path;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << f.text;
    out.close();
    if (!out) return Error{fmt::format("cannot write '{}'", f.path)};
  }
  return Status::success();
}

// Moves the kept entries from `from` to `to` (both folders exist); on failure moves back what
// it moved, so the user's files are where they were.
Status move_entries(const fs::path& from, const fs::path& to, const std::vector<fs::path>& keep) {
  std::vector<fs::path> moved;
  for (const fs::path& k : keep) {
    std::error_code ec;
    fs::create_directories((to / k).parent_path(), ec);
    fs::rename(from / k, to / k, ec);
    if (ec) {
      for (const fs::path& m : moved) fs::rename(to / m, from / m, ec);
      return Error{fmt::format("cannot carry '{}' over into the new output: {}", k.string(),
                               ec.message())};
    }
    moved.push_back(k);
  }
  return Status::success();
}

// Creates the missing parents of `target`; returns the outermost one created (empty if none),
// for removal when the write fails.
Expected<fs::path> create_parents(const fs::path& target) {
  fs::path first_missing;
  std::error_code ec;
  for (fs::path p = target.parent_path(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    first_missing = p;
    if (p == p.parent_path()) break;
  }
  if (!first_missing.empty()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) return Error{"cannot create its parent folder: " + ec.message()};
  } else if (!fs::is_directory(target.parent_path(), ec)) {
    return Error{"its parent is not a folder"};
  }
  return first_missing;
}

}  // namespace

Status write_folder_atomically(const std::string& dir,
                               const std::vector<cudnn::GeneratedFile>& files,
                               const WriteFolderOptions& options) {
  Expected<fs::path> resolved = resolve_target(dir);
  if (!resolved) return resolved.error();
  const fs::path target = *resolved;
  Expected<std::vector<fs::path>> keep = entries_to_keep(target, files, options);
  if (!keep) return keep.error();
  Expected<fs::path> created = create_parents(target);
  if (!created) return created.error();

  const std::string name = target.filename().string();
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tmp.{}", name, getpid());
  const fs::path old = target.parent_path() / fmt::format(".{}.old.{}", name, getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  auto fail = [&](const Error& why) {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
    if (!created->empty()) fs::remove_all(*created, ignore);
    return why;
  };
  if (!fs::create_directory(tmp, ec)) {
    return fail(Error{"cannot create a temporary folder: " + ec.message()});
  }
  if (Status s = write_files(tmp, files); !s) return fail(s.error());
  const bool had_old = fs::exists(target, ec);
  if (had_old) {
    if (Status s = move_entries(target, tmp, *keep); !s) return fail(s.error());
    fs::rename(target, old, ec);
    if (ec) {
      std::error_code ignore;
      (void)move_entries(tmp, target, *keep);
      return fail(Error{"cannot move the previous output aside: " + ec.message()});
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    if (had_old) {
      fs::rename(old, target, ignore);
      (void)move_entries(tmp, target, *keep);
    }
    return fail(Error{"cannot move the new output into place: " + ec.message()});
  }
  // `old` now holds only what zoc wrote (or, with --force, the folder the user gave up).
  if (had_old) fs::remove_all(old, ec);
  return Status::success();
}

}  // namespace zoc
