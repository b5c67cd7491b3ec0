// What the fuzz targets share: a private scratch folder for the files their code under test can
// only read by path, and a check that fails loudly.
//
// zoc's YAML frontend and the weight readers take a path, not bytes, so each target writes its
// input to a file in a folder of its own (one per process, under /dev/shm when it exists so
// that nothing touches the disk, removed at exit). The folder also holds the files that model
// inputs may include, so that relative includes find something real instead of whatever lies
// in the directory the fuzzer happens to run in.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "compiler/support/diagnostics.h"
#include "compiler/support/sanitize.h"

namespace zoc::fuzz {

// A violated invariant of the code under test: print it and abort, which libFuzzer (and the
// replay test) report as a crash with this input.
[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz invariant violated: %s%s%s\n", what, detail.empty() ? "" : ": ",
               detail.c_str());
  std::abort();
}

inline void check(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) fail(what, detail);
}

// Strings from the input reach messages escaped (issue 31): no message holds a control byte, a
// hidden or bidirectional character, or a line break but before a list's indented line, even
// before Diagnostic::render escapes it again as a last guard.
inline void check_escaped(const Diagnostics& diags) {
  for (const Diagnostic& d : diags.all()) {
    check(terminal_safe(d.message, /*continuation_lines=*/true) == d.message &&
              terminal_safe(d.loc.file, false) == d.loc.file,
          "a message holds text a terminal would act on",
          shown_text(d.loc.str() + ": " + d.message));
  }
}

namespace detail {
inline std::string& scratch_path() {
  static std::string path;
  return path;
}
inline void remove_scratch() {
  std::error_code ec;
  if (!scratch_path().empty()) std::filesystem::remove_all(scratch_path(), ec);
}
}  // namespace detail

// This process's scratch folder (created on first use).
inline const std::string& scratch_dir() {
  std::string& path = detail::scratch_path();
  if (path.empty()) {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    const std::filesystem::path dir = base / ("zoc-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    check(!ec, "cannot create the scratch folder", dir.string() + ": " + ec.message());
    path = dir.string();
    std::atexit(detail::remove_scratch);
  }
  return path;
}

// Writes `size` bytes to `path`, replacing it.
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (size) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  check(static_cast<bool>(out), "cannot write the scratch file", path);
}

// Copies a file of the source tree into the scratch folder (as `name`, which may hold a folder).
inline void copy_into_scratch(const std::string& source, const std::string& name) {
  const std::filesystem::path to = std::filesystem::path(scratch_dir()) / name;
  std::error_code ec;
  std::filesystem::create_directories(to.parent_path(), ec);
  std::filesystem::copy_file(source, to, std::filesystem::copy_options::overwrite_existing, ec);
  check(!ec, "cannot copy into the scratch folder", source + ": " + ec.message());
}

}  // namespace zoc::fuzz
