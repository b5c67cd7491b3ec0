// Reading the zip directory of a `.pt` file (see archive.h). Only the end-of-directory records,
// the directory and the version record's local header are read; the file is never mapped whole.
// PyTorch writes zip64 archives with stored (uncompressed) records, which is all this needs to
// understand; anything it does not understand is left to LibTorch to judge.
#include "compiler/frontend/torchscript/archive.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace zoc::torchscript {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50,
                   kEndOfDirectory = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50;

uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : in_(path, std::ios::binary) {
    if (in_) {
      in_.seekg(0, std::ios::end);
      size_ = static_cast<uint64_t>(in_.tellg());
    }
  }
  bool open() const { return static_cast<bool>(in_); }
  uint64_t size() const { return size_; }
  // Reads [offset, offset + n) or returns an empty vector if that is not inside the file.
  std::vector<uint8_t> read(uint64_t offset, uint64_t n) {
    if (offset > size_ || n > size_ - offset) return {};
    std::vector<uint8_t> buf(n);
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(n));
    if (!in_) return {};
    return buf;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint64_t compressed = 0;
  uint64_t local_offset = 0;
};

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

}  // namespace

Expected<ArchiveInfo> inspect_archive(const std::string& path) {
  Reader r(path);
  if (!r.open()) return Error{"cannot open the file"};
  if (r.size() == 0) return Error{"the file is empty; " + std::string(kHowToSave)};
  const std::vector<uint8_t> head = r.read(0, std::min<uint64_t>(r.size(), 24));
  if (head.size() >= 4 && le(head.data(), 4) != kLocalHeader) {
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
  const std::string truncated = fmt::format(
      "truncated: the file ({} bytes) starts like a TorchScript zip archive but its end, the zip "
      "directory, is missing; it was probably cut short while being written, copied or "
      "downloaded",
      r.size());
  if (r.size() < 22) return Error{truncated};

  // The end-of-directory record is the last 22 bytes plus an optional comment of < 64 KiB.
  const uint64_t tail_len = std::min<uint64_t>(r.size(), 22 + 65535);
  const uint64_t tail_at = r.size() - tail_len;
  const std::vector<uint8_t> tail = r.read(tail_at, tail_len);
  if (tail.size() != tail_len) return Error{"cannot read the file"};
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i) {
    if (le(&tail[i], 4) == kEndOfDirectory &&
        static_cast<uint64_t>(i) + 22 + le(&tail[i + 20], 2) == tail_len) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return Error{truncated};
  uint64_t count = le(&tail[eocd + 10], 2), dir_size = le(&tail[eocd + 12], 4),
           dir_offset = le(&tail[eocd + 16], 4);
  const uint64_t eocd_at = tail_at + static_cast<uint64_t>(eocd);
  if (eocd_at >= 20) {
    const std::vector<uint8_t> loc = r.read(eocd_at - 20, 20);
    if (loc.size() == 20 && le(loc.data(), 4) == kZip64Locator) {
      const std::vector<uint8_t> z = r.read(le(&loc[8], 8), 56);
      if (z.size() != 56 || le(z.data(), 4) != kZip64End) {
        return Error{"corrupt zip archive: its zip64 directory record is missing"};
      }
      count = le(&z[32], 8);
      dir_size = le(&z[40], 8);
      dir_offset = le(&z[48], 8);
    }
  }
  if (dir_offset > eocd_at || dir_size > eocd_at - dir_offset || count > dir_size / 46) {
    return Error{fmt::format("{} (its zip directory points outside the file)", truncated)};
  }
  const std::vector<uint8_t> dir = r.read(dir_offset, dir_size);
  std::vector<Entry> entries;
  for (uint64_t pos = 0, k = 0; k < count; ++k) {
    if (pos + 46 > dir.size() || le(&dir[pos], 4) != kCentralHeader) {
      return Error{"corrupt zip archive: its directory is damaged"};
    }
    const uint8_t* h = &dir[pos];
    const uint64_t name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    if (pos + 46 + name_len + extra_len + comment_len > dir.size()) {
      return Error{"corrupt zip archive: its directory is damaged"};
    }
    Entry e;
    e.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    e.method = static_cast<uint16_t>(le(h + 10, 2));
    e.compressed = le(h + 20, 4);
    uint64_t uncompressed = le(h + 24, 4);
    e.local_offset = le(h + 42, 4);
    // zip64 sizes and offsets live in extra field 0x0001, in this order, when saturated.
    for (uint64_t x = 0; x + 4 <= extra_len;) {
      const uint8_t* f = h + 46 + name_len + x;
      const uint64_t id = le(f, 2), len = le(f + 2, 2);
      if (x + 4 + len > extra_len) break;
      if (id == 1) {
        uint64_t at = 4;
        auto take = [&](uint64_t& field) {
          if (field == 0xFFFFFFFFu && at + 8 <= 4 + len) {
            field = le(f + at, 8);
            at += 8;
          }
        };
        take(uncompressed);
        take(e.compressed);
        take(e.local_offset);
      }
      x += 4 + len;
    }
    if (e.local_offset >= dir_offset || e.compressed > dir_offset - e.local_offset) {
      return Error{fmt::format("{} (record '{}' lies outside the file)", truncated, e.name)};
    }
    entries.push_back(std::move(e));
    pos += 46 + name_len + extra_len + comment_len;
  }
  if (entries.empty()) return Error{"an empty zip archive, not a TorchScript model"};

  ArchiveInfo info;
  info.records = static_cast<int64_t>(entries.size());
  info.file_size = static_cast<int64_t>(r.size());
  const size_t slash = entries.front().name.find('/');
  if (slash == std::string::npos || slash == 0) {
    return Error{
        fmt::format("a zip archive that is not a TorchScript model: its records are not "
                    "in one folder as torch.jit.save writes them (first record '{}')",
                    entries.front().name)};
  }
  info.root = entries.front().name.substr(0, slash);
  std::set<std::string> names;
  bool has_code = false;
  for (const Entry& e : entries) {
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
  for (const char* record : {".data/version", "version"}) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const Entry& e) { return e.name == info.root + "/" + record; });
    if (it == entries.end()) continue;
    const std::vector<uint8_t> local = r.read(it->local_offset, 30);
    if (local.size() != 30 || le(local.data(), 4) != kLocalHeader || it->method != 0 ||
        it->compressed == 0 || it->compressed > 20) {
      break;
    }
    const std::vector<uint8_t> text =
        r.read(it->local_offset + 30 + le(&local[26], 2) + le(&local[28], 2), it->compressed);
    int64_t v = 0;
    bool digits = false, ok = !text.empty();
    for (uint8_t c : text) {
      if (std::isdigit(c) && v < 1000000000) {
        v = v * 10 + (c - '0');
        digits = true;
      } else if (!std::isspace(c)) {
        ok = false;
      }
    }
    if (ok && digits) info.format_version = v;
    break;
  }
  return info;
}

}  // namespace zoc::torchscript
