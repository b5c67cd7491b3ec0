// A first look at a `.pt` file without LibTorch: is it a complete zip archive laid out the way
// torch.jit.save writes one, is it safe to hand to LibTorch, and which file format version does
// it declare?
//
// LibTorch's own errors for a text file, a truncated download or a state_dict saved with
// torch.save are long and name its internals ("PytorchStreamReader failed locating file
// constants.pkl"); this check runs first, says what the file is in the user's terms, and finds
// the version record that every later error names. It also refuses hostile archives before
// LibTorch opens them: unsafe record names, duplicates, zip bombs and inconsistent headers
// (zip_archive.h), pickles that name Python globals TorchScript never writes, nest too deep or
// hold tensors that reach past their bytes (pickle_scan.h), and code LibTorch would run or crash
// on while loading it (code_scan.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "zoc/core/expected.h"

namespace zoc::torchscript {

struct ArchiveInfo {
  std::string root;                       // the folder all records are in ("archive", "model")
  std::optional<int64_t> format_version;  // <root>/.data/version, or <root>/version
  int64_t records = 0;
  int64_t file_size = 0;
  // The file checked (st_dev, st_ino): LibTorch is given this file, not whatever the path names
  // by then.
  uint64_t device = 0, inode = 0;

  // "TorchScript file format version 3" (inline: the plugin uses it too).
  std::string describe() const {
    return format_version ? "TorchScript file format version " + std::to_string(*format_version)
                          : "TorchScript archive without a readable version record";
  }
};

// Reads and checks the zip directory of `path` and its pickles. Errors say what the file is
// instead ("not a zip archive", "truncated", "a torch.save file, not TorchScript") or why it is
// refused ("unsafe zip archive: ...", "unsafe pickle: ..."); they do not start with the path.
Expected<ArchiveInfo> inspect_archive(const std::string& path);

}  // namespace zoc::torchscript
