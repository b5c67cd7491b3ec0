// Writing a generated folder so that it is either complete or absent.
//
// The files go to a temporary sibling folder first; only when every file is written is it
// renamed over the destination (the previous contents are moved aside and removed after), so
// an error or an interrupt never leaves a half-written folder, and a failed compile leaves the
// previous output intact.
#pragma once

#include <string>
#include <vector>

#include "compiler/backend/cudnn/emitter.h"
#include "zoc/expected.h"

namespace zoc {

Status write_folder_atomically(const std::string& dir,
                               const std::vector<cudnn::GeneratedFile>& files);

}  // namespace zoc
