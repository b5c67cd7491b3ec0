// The plugin's entry point and its edges with LibTorch: loading an archive, reading its
// state_dict, running the translator. LibTorch reads the very file the archive check read
// (CheckedFile), never whatever its path names by then. LibTorch reports problems by throwing
// c10::Error; every exception is caught here and becomes a diagnostic against the `.pt` file that
// names the LibTorch version and the archive's file format version, so none escapes the plugin.
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/version.h>
#include <unistd.h>

#include <caffe2/serialize/read_adapter_interface.h>
#include <caffe2/serialize/versions.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/frontend/torchscript/plugin.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::detail {
namespace {

// LibTorch's messages carry a backtrace and often a code excerpt; the first lines say it.
std::string libtorch_message(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10e ? c10e->what_without_backtrace() : e.what();
  std::string out;
  size_t lines = 0, start = 0;
  while (start < text.size() && lines < 6) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (!out.empty()) break;
      continue;
    }
    out += (out.empty() ? "" : " ") + line.substr(line.find_first_not_of(" \t"));
    ++lines;
  }
  return out.empty() ? std::string("(no message)") : out;
}

std::string libtorch_failed(const ArchiveInfo& archive, const std::exception& e) {
  return fmt::format("LibTorch {} cannot read this {}: {}", TORCH_VERSION, archive.describe(),
                     readable_libtorch_text(libtorch_message(e)));
}

// The file inspect_archive checked, as LibTorch reads it: opened again without blocking and
// compared with what was checked (the same file, the same size), so that a path that now names
// another file, a pipe or a device is refused instead of read.
class CheckedFile : public caffe2::serialize::ReadAdapterInterface {
 public:
  ~CheckedFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  // An error message if `path` is no longer the file `archive` describes.
  std::optional<std::string> open(const std::string& path, const ArchiveInfo& archive) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_dev) != archive.device ||
        static_cast<uint64_t>(st.st_ino) != archive.inode ||
        st.st_size != static_cast<off_t>(archive.file_size)) {
      return std::string(
          "the file changed while zoc read it (the path no longer names the file "
          "zoc checked); run zoc again");
    }
    size_ = static_cast<size_t>(st.st_size);
    return std::nullopt;
  }
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    size_t done = 0;
    while (done < n && pos + done < size_) {
      const ssize_t got =
          ::pread(fd_, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  int fd_ = -1;
  size_t size_ = 0;
};

std::optional<jit::Module> load_module(const std::string& path, const ArchiveInfo& archive,
                                       Diagnostics& diags) {
  auto file = std::make_shared<CheckedFile>();
  if (auto changed = file->open(path, archive)) {
    diags.error(SourceLoc{path, 0, 0}, *changed);
    return std::nullopt;
  }
  try {
    // Kept in the mode it was saved in: a model saved in training mode runs batch statistics,
    // dropout and whatever else reads `self.training`, which zoc refuses where it meets it (as for
    // a traced model), never silently computing the eval-mode model instead.
    return torch::jit::load(file, c10::Device(c10::kCPU));
  } catch (const std::exception& e) {
    diags.error(SourceLoc{path, 0, 0}, libtorch_failed(archive, e));
    return std::nullopt;
  }
}

bool load_model(const std::string& path, const ArchiveInfo& archive, const Options& options,
                ir::Graph& out, Diagnostics& diags) {
  try {
    auto module = load_module(path, archive, diags);
    if (!module) return false;
    try {
      Translator translator(*module, path, options, diags);
      if (translator.run(out)) return true;
      if (translator.read_training()) {
        diags.note(SourceLoc{path, 0, 0},
                   "the model was saved in training mode: call model.eval() before saving");
      }
      return false;
    } catch (const std::exception& e) {  // the file loaded: a bug of zoc's, not the file's
      diags.error(SourceLoc{path, 0, 0},
                  fmt::format("zoc's TorchScript translation failed (please report): {}",
                              libtorch_message(e)));
      return false;
    }
  } catch (const std::exception& e) {
    diags.error(SourceLoc{path, 0, 0}, libtorch_failed(archive, e));
  } catch (...) {
    diags.error(SourceLoc{path, 0, 0}, "LibTorch failed with an unknown exception");
  }
  return false;
}

// One state_dict entry as bytes: floating tensors as float32, integer ones as they are.
std::optional<std::string> to_state_tensor(const std::string& name, const at::Tensor& value,
                                           StateTensor& out) {
  at::Tensor t = value.detach().to(at::kCPU);
  if (t.is_quantized() || t.is_sparse() || t.is_complex()) {
    return fmt::format("tensor '{}' is quantized, sparse or complex", name);
  }
  if (t.is_floating_point()) t = t.to(at::kFloat);
  t = t.contiguous();
  switch (t.scalar_type()) {
    case at::kFloat:
      out.dtype = st::DType::F32;
      break;
    case at::kLong:
      out.dtype = st::DType::I64;
      break;
    case at::kInt:
      out.dtype = st::DType::I32;
      break;
    case at::kShort:
      out.dtype = st::DType::I16;
      break;
    case at::kChar:
      out.dtype = st::DType::I8;
      break;
    case at::kByte:
      out.dtype = st::DType::U8;
      break;
    case at::kBool:
      out.dtype = st::DType::BOOL;
      break;
    default:
      return fmt::format("tensor '{}' has dtype {}", name, c10::toString(t.scalar_type()));
  }
  out.name = name;
  out.shape.assign(t.sizes().begin(), t.sizes().end());
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  out.data.resize(bytes);
  if (bytes > 0) std::memcpy(out.data.data(), t.data_ptr(), bytes);
  return std::nullopt;
}

bool read_state_dict(const std::string& path, const ArchiveInfo& archive,
                     std::vector<StateTensor>& out, Diagnostics& diags) {
  try {
    auto module = load_module(path, archive, diags);
    if (!module) return false;
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& p : module->named_parameters(/*recurse=*/true))
      named.emplace_back(p.name, p.value);
    for (const auto& b : module->named_buffers(/*recurse=*/true))
      named.emplace_back(b.name, b.value);
    bool ok = true;
    for (const auto& [name, tensor] : named) {
      if (shown_text(name) != name) {
        diags.error(SourceLoc{path, 0, 0},
                    fmt::format("tensor '{}' has a name that zoc cannot print as it is, which "
                                "zoc does not export",
                                shown_text(name)));
        ok = false;
        continue;
      }
      StateTensor s;
      if (auto why = to_state_tensor(name, tensor, s)) {
        diags.error(SourceLoc{path, 0, 0}, *why + ", which zoc does not export");
        ok = false;
        continue;
      }
      out.push_back(std::move(s));
    }
    return ok;
  } catch (const std::exception& e) {
    diags.error(SourceLoc{path, 0, 0}, libtorch_failed(archive, e));
  } catch (...) {
    diags.error(SourceLoc{path, 0, 0}, "LibTorch failed with an unknown exception");
  }
  return false;
}

}  // namespace

// LibTorch's internal checks read "isObject() INTERNAL ASSERT FAILED at "./aten/src/ATen/core/
// ivalue_inl.h":120, please report a bug to PyTorch. Expected Object but got Tuple": a bug report
// request about LibTorch's own sources, where the file is at fault. Kept: the check and its cause.
std::string readable_libtorch_text(const std::string& text) {
  constexpr std::string_view kAssert = " INTERNAL ASSERT FAILED at ";
  const size_t at = text.find(kAssert);
  if (at == std::string::npos) return shown_text(text);
  const std::string check = text.substr(0, at);
  std::string cause;
  const size_t bug = text.find("please report a bug to PyTorch.", at);
  if (bug != std::string::npos) {
    cause = text.substr(bug + std::string_view("please report a bug to PyTorch.").size());
    cause.erase(0, cause.find_first_not_of(' '));
  }
  return shown_text(fmt::format(
      "the file holds something LibTorch's loader does not expect there (its internal check {} "
      "failed{}{})",
      check, cause.empty() ? "" : ": ", cause));
}

}  // namespace zoc::torchscript::detail

extern "C" __attribute__((visibility("default"))) const zoc::torchscript::plugin::Api*
zoc_torchscript_plugin_api() {
  namespace p = zoc::torchscript::plugin;
  zoc::torchscript::detail::guard_libtorch_string_ops();  // before any model is compiled
  static const p::Api api{p::kAbiVersion,
                          p::layout_fingerprint(),
                          TORCH_VERSION,
                          static_cast<int64_t>(caffe2::serialize::kMinSupportedFileFormatVersion),
                          static_cast<int64_t>(caffe2::serialize::kMaxSupportedFileFormatVersion),
                          &zoc::torchscript::detail::load_model,
                          &zoc::torchscript::detail::read_state_dict};
  return &api;
}
