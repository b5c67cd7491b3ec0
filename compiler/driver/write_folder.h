// Writing a generated folder so that it is either complete or absent, and so that nothing zoc
// did not write is ever deleted.
//
// The files go to a temporary sibling folder first; only when every file is written is it
// renamed over the destination, so an error or an interrupt never leaves a half-written folder,
// and a failed compile leaves the previous output intact.
//
// zoc replaces only a folder it wrote itself: every generated folder holds a stamp
// (`.zoc-generated`) listing the files zoc wrote there. An existing folder without the stamp
// (a user's own folder, or one from a zoc older than the stamp) is refused unless `force` is
// set, and is never touched otherwise; an empty folder is fine. In a stamped folder, anything
// the stamp does not list (a build folder, notes) is carried over into the new output rather
// than deleted. Refused always: an existing file or symbolic link at the path, and the current
// folder or one containing it (`-o .`, `-o ..`). Missing parent folders are created (and removed
// again if the write fails).
#pragma once

#include <string>
#include <vector>

#include "compiler/backend/cudnn/emitter.h"
#include "zoc/core/expected.h"

namespace zoc {

// The stamp's file name inside every generated folder.
inline constexpr const char* kFolderStamp = ".zoc-generated";

struct WriteFolderOptions {
  bool force = false;  // replace an existing folder zoc did not write (zoc compile --force)
};

Status write_folder_atomically(const std::string& dir,
                               const std::vector<cudnn::GeneratedFile>& files,
                               const WriteFolderOptions& options = {});

}  // namespace zoc
