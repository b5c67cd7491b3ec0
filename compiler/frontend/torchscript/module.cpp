// The plugin's entry point and its edges with LibTorch: loading an archive, reading its
// state_dict, running the translator. LibTorch reports problems by throwing c10::Error; every
// exception is caught here and becomes a diagnostic against the `.pt` file that names the
// LibTorch version and the archive's file format version, so none escapes the plugin.
#include <torch/version.h>

#include <caffe2/serialize/versions.h>

#include <cstring>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/frontend/torchscript/plugin.h"

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
                     libtorch_message(e));
}

std::optional<jit::Module> load_module(const std::string& path, const ArchiveInfo& archive,
                                       Diagnostics& diags) {
  try {
    jit::Module module = torch::jit::load(path, c10::Device(c10::kCPU));
    module.eval();  // dropout and batch_norm take their inference paths
    return module;
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
      return translator.run(out);
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
}  // namespace zoc::torchscript::detail

extern "C" __attribute__((visibility("default"))) const zoc::torchscript::plugin::Api*
zoc_torchscript_plugin_api() {
  namespace p = zoc::torchscript::plugin;
  static const p::Api api{p::kAbiVersion,
                          p::layout_fingerprint(),
                          TORCH_VERSION,
                          static_cast<int64_t>(caffe2::serialize::kMinSupportedFileFormatVersion),
                          static_cast<int64_t>(caffe2::serialize::kMaxSupportedFileFormatVersion),
                          &zoc::torchscript::detail::load_model,
                          &zoc::torchscript::detail::read_state_dict};
  return &api;
}
