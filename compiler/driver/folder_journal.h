// The staging folder and its journal: how a write into an output folder is prepared, committed,
// and finished or undone by a later run after a kill (write_folder.h gives the whole design).
//
// A staging folder holds `journal` (what the write will do) and `files/` (the new output). Beside
// a new output folder it is `.zoc-<hash of the folder's name>.new`, and its commit is one rename
// of `files/` to the folder's name; inside an existing folder it is `.zoc-staging`, and its commit
// marks the journal committed and then moves zoc's files in one by one. Names are fixed and short,
// so they fit NAME_MAX whatever the folder is called, and a later run finds them whatever the PID.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/driver/folder_ops.h"
#include "zoc/core/expected.h"

namespace zoc::folder {

// The stamp's file name inside every generated folder.
inline constexpr const char* kFolderStamp = ".zoc-generated";
// The staging folder's name inside an existing output folder.
inline constexpr const char* kInnerStaging = ".zoc-staging";

// What was at a new file's path when the write was planned, which a later run checks again
// before it finishes the move.
enum class Prior {
  kAbsent,  // nothing: the path must still be free (or hold the new file already)
  kZoc,     // a file of zoc's earlier output, `old`: it must still hold that (or the new file)
  kForced,  // anything but a folder, replaced because the user passed --force (or the stamp)
};

struct Move {
  std::string path;  // relative to the output folder, lexically normal
  FileId id;         // what the staged file holds
  Prior prior = Prior::kAbsent;
  FileId old;  // kZoc only
};

// A file of zoc's earlier output that the new one lacks; deleted only while it still holds `id`.
struct Removal {
  std::string path;
  FileId id;
};

struct Intent {
  std::string owner;  // SHA-256 of the output folder's name
  bool committed = false;
  std::vector<Move> moves;  // the stamp's move is done last
  std::vector<Removal> removals;
};

std::string intent_text(const Intent& intent);
Expected<Intent> parse_intent(std::string_view text);

// The staging folder beside `target` (for a new output folder) and inside it (for an existing
// one). `target` is absolute and normal.
fs::path sibling_staging(const fs::path& target);
fs::path inner_staging(const fs::path& target);
std::string owner_of(const fs::path& target);

struct StagedFile {
  std::string path;
  std::string_view text;
};

// Creates the staging folder `root` (which must not exist): the uncommitted journal first, so a
// later run knows every name it may find under root/files, then the files.
Status stage(Changes& changes, const fs::path& root, const Intent& intent,
             const std::vector<StagedFile>& files);

// Commits a staging beside a new output folder: one rename makes the folder appear complete.
Status commit_beside(Changes& changes, const fs::path& root, const fs::path& target);

// Commits a staging inside `target`: the journal is marked committed (from here on a later run
// finishes the write), then zoc's files are moved in, its stale files deleted, the stamp moved
// last, and the staging folder removed.
Status commit_inside(Changes& changes, const fs::path& target, Intent intent,
                     std::vector<std::string>& notes);

// Deletes the staged files of an uncommitted write (the names `intent` lists; null: none), then
// the staging folder `root`.
Status discard(Changes& changes, const fs::path& root, const Intent* intent);

// Finishes (committed) or removes (uncommitted) what an interrupted write into `target` left,
// beside it or inside it. Never deletes a name its journal does not list: a staging folder
// holding anything else is left as it is, with an error saying so.
Status recover(Changes& changes, const fs::path& target, std::vector<std::string>& notes);

}  // namespace zoc::folder
