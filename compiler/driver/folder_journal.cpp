// Staging, committing and recovering a write into an output folder (see folder_journal.h, and
// write_folder.h for what each kill instant leaves and why no user file is ever at risk).
#include "compiler/driver/folder_journal.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "compiler/support/sha256.h"

namespace zoc::folder {
namespace {

constexpr const char* kJournal = "journal";
constexpr const char* kJournalPart = "journal.part";
constexpr const char* kFiles = "files";
constexpr size_t kMaxJournalBytes = 16 << 20;

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string id_text(const FileId& id) { return fmt::format("{} {}", id.sha256, id.size); }

// Splits off the first `n` space-separated words of `line`; the rest (a path, which may hold
// spaces) goes in `rest`.
bool split_words(std::string_view line, size_t n, std::vector<std::string_view>& words,
                 std::string_view& rest) {
  words.clear();
  for (size_t i = 0; i < n; ++i) {
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return false;
    words.push_back(line.substr(0, sp));
    line.remove_prefix(sp + 1);
  }
  rest = line;
  return !rest.empty();
}

bool parse_id(std::string_view sha, std::string_view size, FileId& id) {
  if (!is_hex64(sha) || size.empty() || size.size() > 19) return false;
  uint64_t v = 0;
  for (char c : size) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  id = {std::string(sha), v};
  return true;
}

bool safe_path(std::string_view p) {
  const fs::path rel(p);
  if (rel.empty() || rel.is_absolute() || rel != rel.lexically_normal()) return false;
  return std::none_of(rel.begin(), rel.end(), [](const fs::path& c) { return c == ".."; });
}

// The folders above `path` ("a/b/c" gives "a", "a/b").
std::vector<fs::path> folders_above(const std::string& path) {
  std::vector<fs::path> out;
  fs::path at;
  const fs::path parent = fs::path(path).parent_path();
  for (const fs::path& part : parent) out.push_back(at /= part);
  return out;
}

// Every folder above the given paths, deepest first (the order in which they can be removed).
std::vector<fs::path> folders_deepest_first(const std::vector<std::string>& paths) {
  std::set<fs::path> all;
  for (const std::string& p : paths) {
    for (const fs::path& f : folders_above(p)) all.insert(f);
  }
  std::vector<fs::path> out(all.begin(), all.end());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    const auto depth = [](const fs::path& p) { return std::distance(p.begin(), p.end()); };
    return depth(a) != depth(b) ? depth(a) > depth(b) : a < b;
  });
  return out;
}

Status write_journal(Changes& changes, const fs::path& root, const Intent& intent) {
  ZOC_TRY(changes.remove_file(root / kJournalPart));
  ZOC_TRY(changes.write_file(root / kJournalPart, intent_text(intent)));
  return changes.rename(root / kJournalPart, root / kJournal);
}

Status make_folders_above(Changes& changes, const fs::path& root, const std::string& path) {
  for (const fs::path& f : folders_above(path)) ZOC_TRY(changes.make_folder(root / f));
  return Status::success();
}

// Removes the staging folder `root` once root/files holds no file: its emptied folders, the
// journal, and itself. Refuses (leaving everything) if anything unexpected remains.
Status remove_staging(Changes& changes, const fs::path& root, const Intent* intent) {
  const fs::path files = root / kFiles;
  if (intent && kind_of(files) == Kind::kFolder) {
    std::vector<std::string> paths;
    for (const Move& m : intent->moves) paths.push_back(m.path);
    for (const fs::path& f : folders_deepest_first(paths)) {
      ZOC_ASSIGN_OR_RETURN(const bool gone, changes.remove_empty_folder(files / f));
      (void)gone;  // a folder still holding something fails the removal of `files` below
    }
  }
  ZOC_ASSIGN_OR_RETURN(bool gone, changes.remove_empty_folder(files));
  if (gone) {
    ZOC_TRY(changes.remove_file(root / kJournal));
    ZOC_TRY(changes.remove_file(root / kJournalPart));
    ZOC_ASSIGN_OR_RETURN(gone, changes.remove_empty_folder(root));
  }
  if (!gone) {
    return Error{fmt::format(
        "{} holds files zoc did not put there, so zoc leaves it as it is; it is the staging "
        "folder of an interrupted zoc compile: move your files out of it (or move it away)",
        shown(root))};
  }
  return Status::success();
}

}  // namespace

Status discard(Changes& changes, const fs::path& root, const Intent* intent) {
  if (intent) {
    for (const Move& m : intent->moves) {
      const fs::path src = root / kFiles / m.path;
      if (inside(root / kFiles, m.path) && kind_of(src) == Kind::kFile) {
        ZOC_TRY(changes.remove_file(src));
      }
    }
  }
  return remove_staging(changes, root, intent);
}

namespace {

// Whether the file at `dst` may be replaced by the staged `m` now.
bool may_replace(const fs::path& dst, const Move& m) {
  const Kind k = kind_of(dst);
  if (k == Kind::kAbsent) return true;
  switch (m.prior) {
    case Prior::kAbsent:
      return k == Kind::kFile && holds(dst, m.id);
    case Prior::kZoc:
      return k == Kind::kFile && (holds(dst, m.old) || holds(dst, m.id));
    case Prior::kForced:
      return k != Kind::kFolder;
  }
  return false;
}

Status apply_move(Changes& changes, const fs::path& root, const fs::path& target, const Move& m,
                  std::vector<std::string>& notes) {
  const fs::path src = root / kFiles / m.path;
  if (kind_of(src) == Kind::kAbsent) return Status::success();  // moved before an interruption
  bool ok = true;
  for (const fs::path& f : folders_above(m.path)) {
    const Kind k = kind_of(target / f);
    if (k == Kind::kAbsent) ZOC_TRY(changes.make_folder(target / f));
    ok = ok && (k == Kind::kAbsent || k == Kind::kFolder);
    if (!ok) break;
  }
  if (ok && may_replace(target / m.path, m)) return changes.rename(src, target / m.path);
  notes.push_back(
      fmt::format("kept {}: it changed while an interrupted zoc compile was writing "
                  "this folder, so the new output lacks that file",
                  shown(m.path)));
  return changes.remove_file(src);
}

Status apply(Changes& changes, const fs::path& root, const fs::path& target, const Intent& intent,
             std::vector<std::string>& notes) {
  const Move* stamp = nullptr;
  for (const Move& m : intent.moves) {
    if (m.path == kFolderStamp) {
      stamp = &m;
      continue;
    }
    ZOC_TRY(apply_move(changes, root, target, m, notes));
  }
  std::vector<std::string> removed;
  for (const Removal& r : intent.removals) {
    const fs::path dst = target / r.path;
    if (inside(target, r.path) && kind_of(dst) == Kind::kFile && holds(dst, r.id)) {
      ZOC_TRY(changes.remove_file(dst));
    }
    removed.push_back(r.path);
  }
  for (const fs::path& f : folders_deepest_first(removed)) {
    if (inside(target, f) && kind_of(target / f) == Kind::kFolder) {
      ZOC_ASSIGN_OR_RETURN(const bool gone, changes.remove_empty_folder(target / f));
      (void)gone;  // a folder the user keeps something in stays
    }
  }
  if (stamp) ZOC_TRY(apply_move(changes, root, target, *stamp, notes));
  return remove_staging(changes, root, &intent);
}

// apply, with an error that says where a committed write that could not finish leaves things.
Status finish(Changes& changes, const fs::path& root, const fs::path& target, const Intent& intent,
              std::vector<std::string>& notes) {
  Status s = apply(changes, root, target, intent, notes);
  if (s || changes.stopped()) return s;
  return Error{
      fmt::format("{}; the new output is partly in place (each file whole, old or new), "
                  "and the next zoc compile into this folder finishes it",
                  s.error().message)};
}

Expected<std::optional<Intent>> read_journal(const fs::path& root) {
  const fs::path journal = root / kJournal;
  if (kind_of(journal) == Kind::kAbsent) return std::optional<Intent>();
  ZOC_ASSIGN_OR_RETURN(const std::string text, read_small_file(journal, kMaxJournalBytes));
  Expected<Intent> intent = parse_intent(text);
  if (!intent) {
    return Error{
        fmt::format("{} is the staging folder of an interrupted zoc compile, but its "
                    "journal is unreadable ({}), so zoc leaves it as it is: move it away",
                    shown(root), intent.error().message)};
  }
  return std::optional<Intent>(std::move(*intent));
}

}  // namespace

std::string intent_text(const Intent& intent) {
  std::string s = fmt::format("zoc-journal 1\nowner {}\nstate {}\n", intent.owner,
                              intent.committed ? "committed" : "staging");
  for (const Move& m : intent.moves) {
    const std::string prior = m.prior == Prior::kAbsent ? "absent"
                              : m.prior == Prior::kForced
                                  ? "forced"
                                  : m.old.sha256 + ":" + std::to_string(m.old.size);
    s += fmt::format("move {} {} {}\n", id_text(m.id), prior, m.path);
  }
  for (const Removal& r : intent.removals)
    s += fmt::format("remove {} {}\n", id_text(r.id), r.path);
  return s + "end\n";
}

Expected<Intent> parse_intent(std::string_view text) {
  Intent intent;
  size_t line_no = 0;
  bool ended = false;
  std::vector<std::string_view> w;
  std::string_view rest;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) break;  // a last line without its newline: torn
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    ++line_no;
    bool ok = !ended;
    if (line_no == 1) {
      ok = line == "zoc-journal 1";
    } else if (line_no == 2) {
      ok = split_words(line, 1, w, rest) && w[0] == "owner" && is_hex64(rest);
      intent.owner = std::string(rest);
    } else if (line_no == 3) {
      ok = line == "state staging" || line == "state committed";
      intent.committed = line == "state committed";
    } else if (line == "end") {
      ended = ok;
    } else if (split_words(line, 4, w, rest) && w[0] == "move" && safe_path(rest)) {
      Move m{std::string(rest), {}, Prior::kForced, {}};
      ok = ok && parse_id(w[1], w[2], m.id);
      const size_t colon = w[3].find(':');
      if (w[3] == "absent") {
        m.prior = Prior::kAbsent;
      } else if (colon != std::string_view::npos) {
        m.prior = Prior::kZoc;
        ok = ok && parse_id(w[3].substr(0, colon), w[3].substr(colon + 1), m.old);
      } else {
        ok = ok && w[3] == "forced";
      }
      intent.moves.push_back(std::move(m));
    } else if (split_words(line, 3, w, rest) && w[0] == "remove" && safe_path(rest)) {
      Removal r{std::string(rest), {}};
      ok = ok && parse_id(w[1], w[2], r.id);
      intent.removals.push_back(std::move(r));
    } else {
      ok = false;
    }
    if (!ok) return Error{fmt::format("line {} is not one zoc writes", line_no)};
  }
  if (!ended || !text.empty()) return Error{"it ends early"};
  return intent;
}

std::string owner_of(const fs::path& target) { return sha256_hex(target.filename().string()); }

fs::path sibling_staging(const fs::path& target) {
  return target.parent_path() / fmt::format(".zoc-{}.new", owner_of(target).substr(0, 16));
}

fs::path inner_staging(const fs::path& target) { return target / kInnerStaging; }

Status stage(Changes& changes, const fs::path& root, const Intent& intent,
             const std::vector<StagedFile>& files) {
  if (kind_of(root) != Kind::kAbsent) {
    return Error{
        fmt::format("{} is in the way of zoc's staging folder: move it away", shown(root))};
  }
  ZOC_TRY(changes.make_folder(root));
  ZOC_TRY(write_journal(changes, root, intent));
  ZOC_TRY(changes.make_folder(root / kFiles));
  for (const StagedFile& f : files) {
    ZOC_TRY(make_folders_above(changes, root / kFiles, f.path));
    ZOC_TRY(changes.write_file(root / kFiles / f.path, f.text));
  }
  return Status::success();
}

Status commit_beside(Changes& changes, const fs::path& root, const fs::path& target) {
  ZOC_TRY(changes.rename(root / kFiles, target));
  return remove_staging(changes, root, nullptr);
}

Status commit_inside(Changes& changes, const fs::path& target, Intent intent,
                     std::vector<std::string>& notes) {
  const fs::path root = inner_staging(target);
  intent.committed = true;
  if (Status s = write_journal(changes, root, intent); !s) {
    if (!changes.stopped()) (void)discard(changes, root, &intent);  // not committed: undo
    return s;
  }
  return finish(changes, root, target, intent, notes);
}

Status recover(Changes& changes, const fs::path& target, std::vector<std::string>& notes) {
  const fs::path beside = sibling_staging(target);
  const Kind beside_kind = kind_of(beside);
  if (beside_kind == Kind::kFolder) {
    ZOC_ASSIGN_OR_RETURN(const std::optional<Intent> intent, read_journal(beside));
    if (intent && intent->owner != owner_of(target)) {
      return Error{
          fmt::format("{} is the staging folder of a zoc compile into another folder "
                      "whose name has the same hash; move it away",
                      shown(beside))};
    }
    if (kind_of(beside / kFiles) != Kind::kAbsent) {
      notes.push_back("removed the unfinished new output of an interrupted zoc compile (" +
                      shown(beside) + ")");
    }
    ZOC_TRY(discard(changes, beside, intent ? &*intent : nullptr));
  } else if (beside_kind != Kind::kAbsent) {
    return Error{
        fmt::format("{} is in the way of zoc's staging folder: move it away", shown(beside))};
  }
  const fs::path inner = inner_staging(target);
  if (kind_of(target) != Kind::kFolder || kind_of(inner) != Kind::kFolder) {
    return Status::success();
  }
  ZOC_ASSIGN_OR_RETURN(const std::optional<Intent> intent, read_journal(inner));
  if (intent && intent->committed) {
    notes.push_back("finished an interrupted zoc compile into this folder first");
    return finish(changes, inner, target, *intent, notes);
  }
  if (intent) notes.push_back("removed the staged files of an interrupted zoc compile");
  return discard(changes, inner, intent ? &*intent : nullptr);
}

}  // namespace zoc::folder
