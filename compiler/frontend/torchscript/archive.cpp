// Inspecting a `.pt` file before LibTorch sees it (see archive.h): what kind of file it is, then
// the zip layer's checks (zip_archive.h), the layout torch.jit.save writes, every pickle
// (pickle_scan.h), every code record (code_scan.h) and the version record. Only the zip
// directory, the local headers, the compressed records (inflated once to check them), the
// pickles, the code and the version record are read; the tensor data never is. PyTorch writes
// zip64 archives whose records are stored or deflated; anything else is refused with a message.
#include "compiler/frontend/torchscript/archive.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/code_scan.h"
#include "compiler/frontend/torchscript/pickle_scan.h"
#include "compiler/frontend/torchscript/zip_archive.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;

// The pickles torch.jit.save writes hold a module's structure, not its tensor data (each tensor
// is a record of its own): ResNet-50's data.pkl is 27 KB. A larger pickle is not read.
constexpr uint64_t kMaxPickleBytes = uint64_t{64} << 20;

// A short, printable preview of the first bytes, so "not a zip archive" can say what it is.
std::string preview(const std::vector<uint8_t>& head) {
  std::string text;
  for (uint8_t c : head) {
    if (c == '\n' || c == '\r') break;
    if (!std::isprint(c)) return "";
    text += static_cast<char>(c);
  }
  return text.empty() ? "" : fmt::format(" (it starts with \"{}\")", text);
}

constexpr const char* kHowToSave =
    "save the model with torch.jit.script(model).save(path) or "
    "torch.jit.trace(model, example_input).save(path)";

// What a file that does not start like a zip archive is instead.
Error not_a_zip(const std::vector<uint8_t>& head) {
  if (head.size() >= 8 && std::equal(head.begin(), head.begin() + 8, "PYTORCH1")) {
    return Error{
        "a TorchScript file from PyTorch's 1.0 preview release ('PYTORCH1' format), "
        "which LibTorch no longer reads; re-save it with a current PyTorch"};
  }
  if (head[0] == 0x80 && head[1] >= 2 && head[1] <= 5) {
    return Error{
        fmt::format("a Python pickle (torch.save with the legacy format), not a "
                    "TorchScript archive; {}",
                    kHowToSave)};
  }
  return Error{
      fmt::format("not a TorchScript file: TorchScript models are zip archives written "
                  "by torch.jit.save, and this file is not a zip archive{}",
                  preview(head))};
}

// The records are laid out as torch.jit.save writes them; fills info.root.
Status check_layout(const std::vector<ZipEntry>& entries, ArchiveInfo& info) {
  const size_t slash = entries.front().name.find('/');
  if (slash == std::string::npos || slash == 0) {
    return Error{
        fmt::format("a zip archive that is not a TorchScript model: its records are not "
                    "in one folder as torch.jit.save writes them (first record '{}')",
                    quoted_name(entries.front().name))};
  }
  info.root = entries.front().name.substr(0, slash);
  std::set<std::string> names;
  bool has_code = false;
  for (const ZipEntry& e : entries) {
    if (e.name.compare(0, slash + 1, info.root + "/") != 0) continue;
    std::string rel = e.name.substr(slash + 1);
    has_code = has_code || rel.compare(0, 5, "code/") == 0;
    names.insert(std::move(rel));
  }
  if (names.count("archive_format") || names.count("archive_version")) {
    return Error{fmt::format("a torch.export program (.pt2), not TorchScript; {}", kHowToSave)};
  }
  if (!names.count("data.pkl")) {
    return Error{
        fmt::format("a zip archive that is not a TorchScript model (it has no "
                    "'{}/data.pkl' record)",
                    info.root)};
  }
  if (!names.count("constants.pkl") && !has_code) {
    return Error{
        fmt::format("a torch.save file (a pickled object such as a state_dict), not "
                    "TorchScript: it holds data but no code; {}",
                    kHowToSave)};
  }
  return Status::success();
}

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

// Every pickle LibTorch may unpickle: data.pkl, constants.pkl, the code's .debug_pkl files and
// any other .pkl record, wherever it is, in any letter case (LibTorch finds records ignoring it).
Status check_pickles(FileReader& r, const std::vector<ZipEntry>& entries, const std::string& root) {
  std::map<std::string, uint64_t> sizes;
  for (const ZipEntry& e : entries) sizes[lower_case(e.name)] = e.uncompressed;
  for (const ZipEntry& e : entries) {
    const std::string lower = lower_case(e.name);
    if (!ends_with(lower, ".pkl") && !ends_with(lower, ".debug_pkl")) continue;
    ZOC_ASSIGN_OR_RETURN(const std::string bytes, read_zip_entry(r, e, kMaxPickleBytes));
    const bool loads_tensors = lower == root + "/data.pkl" || lower == root + "/constants.pkl";
    ZOC_TRY(check_pickle(e.name, bytes, loads_tensors ? &sizes : nullptr));
  }
  return Status::success();
}

// The code records (<root>/code/**.py, TorchScript source), for what LibTorch would run or crash
// on while loading the file (code_scan.h).
Status check_code_records(FileReader& r, const std::vector<ZipEntry>& entries) {
  for (const ZipEntry& e : entries) {
    if (!ends_with(lower_case(e.name), ".py")) continue;
    ZOC_ASSIGN_OR_RETURN(const std::string code, read_zip_entry(r, e, kMaxInflatedTotal));
    ZOC_TRY(check_code(e.name, code));
  }
  return Status::success();
}

// The file format version: the digits of <root>/.data/version or <root>/version, the first that
// exists, as LibTorch reads it. A missing or unreadable one is refused here, before LibTorch,
// whose reader throws from its constructor then and leaks the archive it opened.
Expected<int64_t> read_version(FileReader& r, const std::vector<ZipEntry>& entries,
                               const std::string& root) {
  for (const char* record : {".data/version", "version"}) {
    const std::string name = root + "/" + record;
    auto it = std::find_if(entries.begin(), entries.end(), [&](const ZipEntry& e) {
      return lower_case(e.name) == lower_case(name);
    });
    if (it == entries.end()) continue;
    const auto text = read_zip_entry(r, *it, 20);
    int64_t v = 0;
    bool digits = false, readable = text.ok();
    for (char c : text.ok() ? *text : std::string()) {
      if (std::isdigit(static_cast<unsigned char>(c)) && v < 1000000000) {
        v = v * 10 + (c - '0');
        digits = true;
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        readable = false;
      }
    }
    if (readable && digits) return v;
    return Error{fmt::format(
        "its version record '{}' holds {}, not the file format version number torch.jit.save "
        "writes there; zoc refused the file before loading any of it",
        quoted_name(it->name),
        text.ok() ? "'" + shown_text(*text, 40) + "'" : "more than 20 bytes")};
  }
  return Error{fmt::format(
      "a zip archive that is not a TorchScript model: it has no version record ('{}/version'), "
      "which torch.jit.save always writes",
      quoted_name(root))};
}

}  // namespace

Expected<ArchiveInfo> inspect_archive(const std::string& path) {
  FileReader r;
  ZOC_TRY(r.open(path));
  if (r.size() == 0) return Error{"the file is empty; " + std::string(kHowToSave)};
  const std::vector<uint8_t> head = r.read(0, std::min<uint64_t>(r.size(), 24));
  if (head.size() >= 4 && read_le(head.data(), 4) != kLocalHeader) return not_a_zip(head);
  const std::string truncated = fmt::format(
      "truncated: the file ({} bytes) starts like a TorchScript zip archive but its end, the zip "
      "directory, is missing; it was probably cut short while being written, copied or "
      "downloaded",
      r.size());
  ZOC_ASSIGN_OR_RETURN(const std::vector<ZipEntry> entries, read_zip_directory(r, truncated));
  if (entries.empty()) return Error{"an empty zip archive, not a TorchScript model"};

  ArchiveInfo info;
  info.records = static_cast<int64_t>(entries.size());
  info.file_size = static_cast<int64_t>(r.size());
  info.device = r.device();
  info.inode = r.inode();
  ZOC_TRY(check_layout(entries, info));
  ZOC_TRY(check_pickles(r, entries, lower_case(info.root)));
  ZOC_TRY(check_code_records(r, entries));
  ZOC_ASSIGN_OR_RETURN(info.format_version, read_version(r, entries, info.root));
  return info;
}

}  // namespace zoc::torchscript
