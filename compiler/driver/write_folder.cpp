// Writing a generated folder: which paths zoc may replace or delete, decided from the stamp's
// hashes, then staged and committed through the journal (write_folder.h says why each kill
// instant is safe; folder_journal.cpp does the moving).
#include "compiler/driver/write_folder.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace zoc {
namespace {

namespace fs = std::filesystem;
using folder::FileId;
using folder::Kind;
using folder::kind_of;
using folder::shown;

constexpr size_t kMaxStampBytes = 16 << 20;
constexpr int kLockTimeoutSeconds = 60;

// What the stamp says zoc wrote at a path; `id` is empty for an older zoc's stamp, which
// listed names without their content.
using Stamp = std::map<std::string, std::optional<FileId>>;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

bool is_safe_relative(const std::string& p) {
  const fs::path rel(p);
  if (p.empty() || rel.is_absolute() || p.find('\n') != std::string::npos) return false;
  return std::none_of(rel.begin(), rel.end(), [](const fs::path& c) { return c == ".."; });
}

std::string stamp_text(const std::vector<cudnn::GeneratedFile>& files) {
  std::string s =
      "# This folder was written by zoc. `zoc compile -o` replaces or deletes only the files\n"
      "# listed below (SHA-256, size, path), and only while each still holds what zoc wrote;\n"
      "# anything else in the folder is kept. Do not edit this list.\n";
  for (const cudnn::GeneratedFile& f : files) {
    const FileId id = folder::id_of(f.text);
    s += fmt::format("{} {} {}\n", id.sha256, id.size, f.path);
  }
  return s;
}

// The stamp of `dir`, or nothing when it has none (a stamp that is a link, a folder or unreadable
// is none: then zoc did not write the folder). Lines that are neither zoc's nor a safe
// relative path are ignored.
std::optional<Stamp> read_stamp(const fs::path& dir) {
  if (kind_of(dir / kFolderStamp) != Kind::kFile) return std::nullopt;
  Expected<std::string> text = folder::read_small_file(dir / kFolderStamp, kMaxStampBytes);
  if (!text) return std::nullopt;
  Stamp stamp;
  size_t at = 0;
  while (at < text->size()) {
    size_t nl = text->find('\n', at);
    if (nl == std::string::npos) nl = text->size();
    const std::string line = text->substr(at, nl - at);
    at = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    const std::string digits = sp2 == std::string::npos ? "" : line.substr(sp1 + 1, sp2 - sp1 - 1);
    const bool hashed = sp1 == 64 && sp2 != std::string::npos && !digits.empty() &&
                        digits.size() < 20 && std::all_of(digits.begin(), digits.end(), is_digit) &&
                        std::all_of(line.begin(), line.begin() + 64, is_hex);
    const std::string path = hashed ? line.substr(sp2 + 1) : line;
    const fs::path normal = fs::path(path).lexically_normal();
    // "dir/" would make lstat follow a link at dir: such a line is not zoc's, and ignored.
    if (!is_safe_relative(path) || normal.filename().empty() || normal == ".") continue;
    std::optional<FileId> id;
    if (hashed) id = FileId{line.substr(0, 64), std::stoull(digits)};
    stamp[normal.string()] = id;
  }
  return stamp;
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
    return Error{
        "is the current folder or contains it; zoc writes the generated code into a "
        "folder of its own: name a new one (for example -o out/model)"};
  }
  const fs::file_status st = fs::symlink_status(target, ec);
  if (fs::is_symlink(st)) {
    const fs::path to = fs::read_symlink(target, ec);
    return Error{
        fmt::format("is a symbolic link (to {}); zoc neither replaces a link nor "
                    "writes through one: give the real folder's path",
                    shown(to))};
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    return Error{
        "exists and is not a folder; zoc writes a folder here and will not replace a file"};
  }
  return target;
}

// The generated files with the stamp last, each path checked and made normal.
Expected<std::vector<cudnn::GeneratedFile>> with_stamp(
    const std::vector<cudnn::GeneratedFile>& files) {
  std::vector<cudnn::GeneratedFile> all;
  std::set<std::string> names;
  for (const cudnn::GeneratedFile& f : files) {
    if (!is_safe_relative(f.path)) {
      return Error{fmt::format("refusing to write outside the folder: {}", shown(f.path))};
    }
    const fs::path rel = fs::path(f.path).lexically_normal();
    const std::string first = rel.begin()->string();
    if (first == kFolderStamp || first == folder::kInnerStaging || !names.insert(rel).second) {
      return Error{
          fmt::format("cannot write {}: the name is zoc's own or written twice", shown(f.path))};
    }
    all.push_back({rel.string(), f.text});
  }
  for (const cudnn::GeneratedFile& f : all) {
    for (fs::path up = fs::path(f.path).parent_path(); !up.empty(); up = up.parent_path()) {
      if (names.count(up.string())) {
        return Error{fmt::format("cannot write {}: it is also a folder of the output", shown(up))};
      }
    }
  }
  all.push_back({kFolderStamp, stamp_text(all)});
  return all;
}

std::string quoted_list(const std::vector<std::string>& paths) {
  std::string s;
  for (size_t i = 0; i < paths.size() && i < 3; ++i) {
    s += fmt::format("{}{}", i == 0 ? "" : i + 1 == paths.size() ? " and " : ", ", shown(paths[i]));
  }
  if (paths.size() > 3) s += fmt::format(" and {} more", paths.size() - 3);
  return s;
}

// Why a path the new output needs is not zoc's to replace.
enum class Why { kUnlisted, kChanged, kNoHash, kNotAFile, kFolder, kNoFolder };

std::string why_text(Why why, bool one) {
  const char* it = one ? "it" : "them";
  const char* it_is = one ? "it is" : "they are";
  switch (why) {
    case Why::kUnlisted:
      return fmt::format("zoc did not write {}", it);
    case Why::kChanged:
      return fmt::format("{} changed since zoc wrote {}", one ? "it" : "they", it);
    case Why::kNoHash:
      return fmt::format(
          "an older zoc's stamp lists {} without a content hash, so zoc cannot "
          "tell whether {} changed",
          it, one ? "it" : "they");
    case Why::kNotAFile:
      return fmt::format("{} not a regular file", it_is);
    case Why::kFolder:
      return fmt::format("{} a folder where the new output needs a file", it_is);
    case Why::kNoFolder:
      return fmt::format("{} not a folder where the new output needs one", it_is);
  }
  return "";
}

// The error for the paths in the way of the new output, or success when there are none or
// --force replaces them all. Folders and things where zoc needs a folder are never replaced.
Status refuse_clashes(const std::map<Why, std::vector<std::string>>& clashes, bool force) {
  std::vector<std::string> parts;
  size_t count = 0;
  for (Why why : {Why::kFolder, Why::kNoFolder}) {
    if (!clashes.count(why)) continue;
    const std::vector<std::string>& paths = clashes.at(why);
    parts.push_back(fmt::format("{} ({})", quoted_list(paths), why_text(why, paths.size() == 1)));
    count += paths.size();
  }
  if (!parts.empty()) {
    return Error{
        fmt::format("cannot write the new output: {}; zoc never deletes a folder or "
                    "what is in the way of one: move {} away",
                    fmt::join(parts, ", "), count == 1 ? "it" : "them")};
  }
  if (force) return Status::success();
  for (const auto& [why, paths] : clashes) {
    parts.push_back(
        clashes.size() == 1
            ? fmt::format("{}: {}", quoted_list(paths), why_text(why, paths.size() == 1))
            : fmt::format("{} ({})", quoted_list(paths), why_text(why, paths.size() == 1)));
    count += paths.size();
  }
  if (parts.empty()) return Status::success();
  const bool one = count == 1;
  return Error{
      fmt::format("refusing to replace {}{}the new output needs {}; move {} away, or "
                  "pass --force to replace {}",
                  fmt::join(parts, ", "), clashes.size() == 1 ? " and " : ": ",
                  one ? "its name" : "their names", one ? "it" : "them", one ? "it" : "them")};
}

// An existing folder without a stamp may be written into only when empty, or with --force.
Status check_unstamped(const fs::path& target, bool force) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(target, ec)) {
    entries.push_back(e.path().filename().string());
  }
  if (ec) return Error{"cannot list the folder: " + ec.message()};
  if (entries.empty() || force) return Status::success();
  std::sort(entries.begin(), entries.end());
  return Error{fmt::format(
      "refusing to write into this folder: zoc did not write it (it has no {} stamp) and it holds "
      "{} entr{} ({}); name a new folder, or pass --force to write into it (zoc then replaces "
      "the files at the names it writes and keeps everything else)",
      kFolderStamp, entries.size(), entries.size() == 1 ? "y" : "ies", quoted_list(entries))};
}

// Where a new file may go in `target`, and why not if it may not (nullopt: it may, with `m`).
std::optional<Why> place(const fs::path& target, const std::string& path, const Stamp& stamp,
                         folder::Move& m) {
  fs::path at = target;
  for (const fs::path& part : fs::path(path).parent_path()) {
    at /= part;
    const Kind k = kind_of(at);
    if (k == Kind::kAbsent) return std::nullopt;  // nor anything below: m.prior stays kAbsent
    if (k != Kind::kFolder) return Why::kNoFolder;
  }
  const fs::path dst = target / path;
  const Kind k = kind_of(dst);
  if (k == Kind::kAbsent) return std::nullopt;
  if (k == Kind::kFolder) return Why::kFolder;
  m.prior = folder::Prior::kForced;
  if (path == kFolderStamp) return std::nullopt;  // the stamp is zoc's by its name
  if (k != Kind::kFile) return Why::kNotAFile;
  const auto listed = stamp.find(path);
  if (listed == stamp.end()) return Why::kUnlisted;
  // An older zoc's stamp lists names only; such a file that already holds the new text is
  // left as it is (it loses nothing), and listed with its hash from now on.
  const FileId old = listed->second ? *listed->second : m.id;
  if (!folder::holds(dst, old)) return listed->second ? Why::kChanged : Why::kNoHash;
  m.prior = folder::Prior::kZoc;
  m.old = old;
  return std::nullopt;
}

// The journal of a write into the existing folder `target`: a move for every new file (the
// stamp last), a removal for every listed file of zoc's that the new output lacks, and notes
// for the listed paths kept because zoc cannot prove them its own.
Expected<folder::Intent> plan(const fs::path& target,
                              const std::vector<cudnn::GeneratedFile>& files, bool force,
                              std::vector<std::string>& notes) {
  const std::optional<Stamp> stamp = read_stamp(target);
  if (!stamp) ZOC_TRY(check_unstamped(target, force));
  const Stamp listed = stamp ? *stamp : Stamp{};
  folder::Intent intent;
  intent.owner = folder::owner_of(target);
  std::map<Why, std::vector<std::string>> clashes;
  std::set<std::string> needed;
  for (const cudnn::GeneratedFile& f : files) {
    folder::Move m{f.path, folder::id_of(f.text), folder::Prior::kAbsent, {}};
    if (std::optional<Why> why = place(target, f.path, listed, m)) {
      clashes[*why].push_back(f.path);
    }
    needed.insert(f.path);
    // A file of zoc's that already holds the new text stays as it is: fewer changes, and a
    // build of the folder does not see it as new.
    if (m.prior != folder::Prior::kZoc || !(m.old == m.id)) intent.moves.push_back(std::move(m));
  }
  ZOC_TRY(refuse_clashes(clashes, force));
  std::map<Why, std::vector<std::string>> kept;
  for (const auto& [path, id] : listed) {
    const Kind k = kind_of(target / path);
    if (needed.count(path) || k == Kind::kAbsent || !folder::inside(target, path)) continue;
    if (k != Kind::kFile) {
      kept[Why::kNotAFile].push_back(path);
    } else if (!id) {
      kept[Why::kNoHash].push_back(path);
    } else if (!folder::holds(target / path, *id)) {
      kept[Why::kChanged].push_back(path);
    } else {
      intent.removals.push_back({path, *id});
    }
  }
  for (const auto& [why, paths] : kept) {
    const bool one = paths.size() == 1;
    notes.push_back(
        why == Why::kChanged
            ? fmt::format("kept {}: the stamp lists {}, but {} not hold what zoc wrote "
                          "there, so {} yours now",
                          quoted_list(paths), one ? "it" : "them", one ? "it does" : "they do",
                          one ? "it is" : "they are")
        : why == Why::kNoHash
            ? fmt::format("kept {}: the stamp lists {} without a content hash (an older zoc's "
                          "stamp), so zoc cannot tell {} from yours",
                          quoted_list(paths), one ? "it" : "them", one ? "it" : "them")
            : fmt::format("kept {}: the stamp lists {}, but {} not a file zoc wrote",
                          quoted_list(paths), one ? "it" : "them", one ? "it is" : "they are"));
  }
  return intent;
}

// Creates the missing parents of `target`; returns those it created, outermost first.
Expected<std::vector<fs::path>> create_parents(folder::Changes& changes, const fs::path& target) {
  std::vector<fs::path> missing;
  for (fs::path p = target.parent_path(); kind_of(p) == Kind::kAbsent && p != p.parent_path();
       p = p.parent_path()) {
    missing.insert(missing.begin(), p);
  }
  for (const fs::path& p : missing) {
    if (Status s = changes.make_folder(p); !s) {
      return changes.stopped() ? s.error()
                               : Error{"cannot create its parent folder: " + s.error().message};
    }
  }
  if (kind_of(target.parent_path()) != Kind::kFolder) return Error{"its parent is not a folder"};
  return missing;
}

Status write_locked(folder::Changes& changes, const fs::path& target,
                    const std::vector<cudnn::GeneratedFile>& files, bool force,
                    std::vector<std::string>& notes) {
  ZOC_TRY(folder::recover(changes, target, notes));
  std::map<std::string, std::string_view> text;
  for (const cudnn::GeneratedFile& f : files) text[f.path] = f.text;
  auto staged = [&](const folder::Intent& intent) {
    std::vector<folder::StagedFile> out;
    for (const folder::Move& m : intent.moves) out.push_back({m.path, text.at(m.path)});
    return out;
  };
  const Kind k = kind_of(target);
  if (k == Kind::kAbsent) {
    folder::Intent intent;
    intent.owner = folder::owner_of(target);
    for (const cudnn::GeneratedFile& f : files) {
      intent.moves.push_back({f.path, folder::id_of(f.text), folder::Prior::kAbsent, {}});
    }
    const fs::path root = folder::sibling_staging(target);
    if (Status s = folder::stage(changes, root, intent, staged(intent)); !s) {
      if (!changes.stopped()) (void)folder::discard(changes, root, &intent);
      return s;
    }
    return folder::commit_beside(changes, root, target);
  }
  if (k != Kind::kFolder) return Error{"exists and is not a folder"};
  if (::access(target.c_str(), W_OK | X_OK) != 0) {
    return Error{fmt::format("cannot write into it: {}", folder::errno_text(errno))};
  }
  ZOC_ASSIGN_OR_RETURN(folder::Intent intent, plan(target, files, force, notes));
  const fs::path root = folder::inner_staging(target);
  if (Status s = folder::stage(changes, root, intent, staged(intent)); !s) {
    if (!changes.stopped()) (void)folder::discard(changes, root, &intent);
    return s;
  }
  return folder::commit_inside(changes, target, std::move(intent), notes);
}

}  // namespace

Expected<WriteFolderReport> write_folder_atomically(const std::string& dir,
                                                    const std::vector<cudnn::GeneratedFile>& files,
                                                    const WriteFolderOptions& options) {
  ZOC_ASSIGN_OR_RETURN(const fs::path target, resolve_target(dir));
  ZOC_ASSIGN_OR_RETURN(const std::vector<cudnn::GeneratedFile> all, with_stamp(files));
  folder::Changes changes(options.stop_after_changes);
  ZOC_ASSIGN_OR_RETURN(const std::vector<fs::path> created, create_parents(changes, target));
  WriteFolderReport report;
  Status written = Status::success();
  {
    Expected<folder::FolderLock> lock =
        folder::FolderLock::acquire(target.parent_path(), kLockTimeoutSeconds);
    written = lock ? write_locked(changes, target, all, options.force, report.notes)
                   : Status(lock.error());
  }
  if (written) return report;
  if (!changes.stopped()) {  // a stop stands for a kill: nothing more runs
    for (auto p = created.rbegin(); p != created.rend(); ++p) {
      (void)changes.remove_empty_folder(*p);
    }
  }
  return written.error();
}

}  // namespace zoc
