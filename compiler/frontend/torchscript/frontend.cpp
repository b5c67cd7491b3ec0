// The LibTorch-free half of the TorchScript frontend (see torchscript_frontend.h): checks the
// archive, finds and loads the plugin once per process, checks the file format version against
// what the plugin's LibTorch reads, and writes state_dicts as safetensors.
#include "compiler/frontend/torchscript/torchscript_frontend.h"

#include <dlfcn.h>

#include <filesystem>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/plugin.h"

namespace zoc::torchscript {
namespace {

constexpr const char* kNoLibTorch =
    "TorchScript input is not supported by this build of zoc: LibTorch was not found when it "
    "was configured (install Debian's libtorch-dev, or add a LibTorch to CMAKE_PREFIX_PATH, and "
    "configure again)";

// Where the plugin may be: where this build wrote it, then beside the running executable (for a
// zoc copied elsewhere together with its plugin).
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
#ifdef ZOC_TORCHSCRIPT_PLUGIN
  out.emplace_back(ZOC_TORCHSCRIPT_PLUGIN);
#endif
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string beside = (exe.parent_path() / "libzoc_frontend_torchscript.so").string();
  if (!ec && (out.empty() || out.front() != beside)) out.push_back(beside);
  return out;
}

bool load_attempted = false;

// The plugin's function table, loaded on first use and kept for the life of the process
// (LibTorch does not support being unloaded). Nullptr with `why` set if it cannot be loaded.
const plugin::Api* plugin_api(std::string& why) {
  static std::string failure;
  static const plugin::Api* api = []() -> const plugin::Api* {
    load_attempted = true;
    std::string tried;
    for (const std::string& path : plugin_candidates()) {
      if (!std::filesystem::exists(path)) continue;
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* e = dlerror();
        tried += fmt::format("; {}: {}", path, e ? e : "dlopen failed");
        continue;
      }
      auto entry = reinterpret_cast<plugin::EntryPoint>(dlsym(handle, plugin::kEntryPoint));
      const plugin::Api* candidate = entry ? entry() : nullptr;
      if (!candidate || candidate->abi_version != plugin::kAbiVersion ||
          candidate->layout != plugin::layout_fingerprint()) {
        tried += fmt::format("; {}: built from other sources than this zoc (rebuild it)", path);
        continue;
      }
      return candidate;
    }
    failure =
        "cannot load zoc's TorchScript plugin (libzoc_frontend_torchscript.so, which "
        "holds LibTorch)" +
        (tried.empty() ? std::string(": not found; rebuild zoc") : tried);
    return nullptr;
  }();
  why = failure;
  return api;
}

// The first check of every entry point: the file is a TorchScript archive.
bool inspect(const std::string& path, ArchiveInfo& archive, Diagnostics& diags) {
  auto info = inspect_archive(path);
  if (!info) {
    diags.error(SourceLoc{path, 0, 0}, info.error().message);
    return false;
  }
  archive = *info;
  return true;
}

// The plugin, if this build has LibTorch, the plugin loads and its LibTorch reads this file
// format version; nullptr after errors.
const plugin::Api* plugin_for(const std::string& path, const ArchiveInfo& archive,
                              Diagnostics& diags) {
  const SourceLoc at{path, 0, 0};
  if (!built_with_libtorch()) {
    diags.error(at, fmt::format("{} (the file is a {})", kNoLibTorch, archive.describe()));
    return nullptr;
  }
  std::string why;
  const plugin::Api* api = plugin_api(why);
  if (!api) {
    diags.error(at, why);
    return nullptr;
  }
  if (archive.format_version && (*archive.format_version < api->min_format_version ||
                                 *archive.format_version > api->max_format_version)) {
    const bool newer = *archive.format_version > api->max_format_version;
    diags.error(at,
                fmt::format("{} is {} than this zoc's LibTorch {} reads (versions {} to {}): "
                            "{}",
                            archive.describe(), newer ? "newer" : "older", api->libtorch_version,
                            api->min_format_version, api->max_format_version,
                            newer ? "save it with torch.jit.save from an older PyTorch, or "
                                    "build zoc against a newer LibTorch"
                                  : "save it again with a current PyTorch"));
    return nullptr;
  }
  return api;
}

}  // namespace

bool plugin_load_attempted() { return load_attempted; }

bool built_with_libtorch() {
#ifdef ZOC_HAVE_TORCHSCRIPT
  return true;
#else
  return false;
#endif
}

std::optional<LibTorchInfo> libtorch_info(Diagnostics& diags) {
  if (!built_with_libtorch()) {
    diags.error(SourceLoc{}, kNoLibTorch);
    return std::nullopt;
  }
  std::string why;
  const plugin::Api* api = plugin_api(why);
  if (!api) {
    diags.error(SourceLoc{}, why);
    return std::nullopt;
  }
  return LibTorchInfo{api->libtorch_version, api->min_format_version, api->max_format_version};
}

std::optional<ir::Graph> load_model(const std::string& path, const Options& options,
                                    Diagnostics& diags) {
  ArchiveInfo archive;
  if (!inspect(path, archive, diags)) return std::nullopt;
  if (built_with_libtorch() && !options.input_dims) {
    diags.error(SourceLoc{path, 0, 0},
                "a TorchScript model has no static input shape: give it with --input CxHxW "
                "(e.g. --input 3x224x224; `zoc run` takes it from its --input .npy)");
    return std::nullopt;
  }
  const plugin::Api* api = plugin_for(path, archive, diags);
  if (!api) return std::nullopt;
  ir::Graph graph;
  if (!api->load_model(path, archive, options, graph, diags)) return std::nullopt;
  return graph;
}

std::optional<std::vector<StateTensor>> read_state_dict(const std::string& path,
                                                        Diagnostics& diags) {
  ArchiveInfo archive;
  if (!inspect(path, archive, diags)) return std::nullopt;
  const plugin::Api* api = plugin_for(path, archive, diags);
  if (!api) return std::nullopt;
  std::vector<StateTensor> tensors;
  if (!api->read_state_dict(path, archive, tensors, diags)) return std::nullopt;
  return tensors;
}

namespace {

// A state_dict as safetensors' tensors, and the metadata PyTorch's tools write with it.
std::vector<st::TensorToWrite> views(const std::vector<StateTensor>& tensors) {
  std::vector<st::TensorToWrite> out;
  out.reserve(tensors.size());
  for (const StateTensor& t : tensors) {
    out.push_back({t.name, t.dtype, t.shape, t.data.data(), t.data.size()});
  }
  return out;
}
const std::vector<std::pair<std::string, std::string>> kStateDictMetadata = {{"format", "pt"}};

}  // namespace

Status write_state_dict(const std::vector<StateTensor>& tensors, const std::string& out_path) {
  return st::write_file(out_path, views(tensors), kStateDictMetadata);
}

Expected<std::vector<uint8_t>> encode_state_dict(const std::vector<StateTensor>& tensors,
                                                 const std::string& label) {
  return st::encode(label, views(tensors), kStateDictMetadata);
}

}  // namespace zoc::torchscript
