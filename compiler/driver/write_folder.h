// Writing a generated folder so that the user's files in it are never at risk, whatever happens
// to zoc meanwhile (an error, a full disk, SIGKILL at any instant, a second zoc at once).
//
// The rule (DESIGN.md, "A model file is data"): the output folder is the user's. zoc replaces or
// deletes only regular files it wrote and that still hold what it wrote; the stamp
// (`.zoc-generated`) lists them with the SHA-256 and size of each. Anything else is kept: files
// the stamp does not list, listed files that changed since (they are the user's now), folders
// and links at listed paths, names a copied or forged stamp lists. An existing folder without a
// stamp is refused unless it is empty or `force` is set; a file at a name the new output needs
// that is not provably zoc's is refused unless `force` is set, which then replaces that file (or
// link) with zoc's; a folder in the way is refused always, as zoc never deletes a folder that
// holds anything. Refused always, too: a file or link at the output path, and the current folder
// or one containing it (`-o .`, `-o ..`). Missing parent folders are created.
//
// Why no kill can lose a user file: zoc never moves, opens for writing or deletes one. The old
// design moved the user's files into a temporary folder and renamed folders around them, so a
// kill could strand them there (issue 31); now only zoc's own files move:
//  - A new folder is written in full beside it (`.zoc-<hash>.new/files`, a fixed-length name, so
//    any valid `-o` name fits NAME_MAX) and renamed into place: absent, or complete.
//  - Into an existing folder, the new files are written to `DIR/.zoc-staging/files` after a
//    journal listing every move and deletion with the hashes that allow it. Then the journal is
//    marked committed (an atomic rename), zoc's files are moved in one rename(2) each (atomic per
//    file: each is its old or its new version), stale files of zoc's are deleted, and the new
//    stamp is moved last. A kill before the commit leaves the old output; after it, the next
//    write (any `zoc compile -o DIR`) first finishes the interrupted one, re-checking every hash.
//  - The next write finds what a killed one left by its fixed names, whatever the PID, and
//    deletes only names its journal lists; a staging folder holding anything else is left as it
//    is, with an error. Two writers at once take turns on an flock(2) of the parent folder,
//    which the kernel releases when a holder dies.
// Power loss is not covered: zoc does not fsync, so its own files may then be torn; the user's,
// never written, are as safe as the file system keeps them.
#pragma once

#include <string>
#include <vector>

#include "compiler/backend/cudnn/emitter.h"
#include "compiler/driver/folder_journal.h"
#include "zoc/core/expected.h"

namespace zoc {

using folder::kFolderStamp;

struct WriteFolderOptions {
  bool force = false;  // zoc compile --force: see above
  // For tests: stop after this many file-system changes, as a SIGKILL would (no cleanup runs).
  long stop_after_changes = -1;
};

struct WriteFolderReport {
  // What the user should know though the write succeeded: listed files kept because they
  // changed, an interrupted earlier write finished first.
  std::vector<std::string> notes;
};

Expected<WriteFolderReport> write_folder_atomically(const std::string& dir,
                                                    const std::vector<cudnn::GeneratedFile>& files,
                                                    const WriteFolderOptions& options = {});

}  // namespace zoc
