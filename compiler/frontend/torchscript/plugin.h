// The contract between zoc and its LibTorch plugin (libzoc_frontend_torchscript.so, see
// torchscript_frontend.h for why LibTorch is a plugin).
//
// The plugin exports one C symbol returning a table of functions. Both sides are compiled from
// the same sources in the same build, so the functions may pass C++ objects; the ABI version and
// a layout fingerprint still guard against a stale plugin left in a build folder. The plugin's
// functions never throw: every LibTorch exception becomes a diagnostic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"

namespace zoc::torchscript::plugin {

inline constexpr uint32_t kAbiVersion = 2;
inline constexpr const char* kEntryPoint = "zoc_torchscript_plugin_api";

// Changes whenever a type passed across the boundary changes size.
constexpr uint64_t layout_fingerprint() {
  return sizeof(ir::Graph) + (sizeof(ir::Node) << 10) + (sizeof(ir::Value) << 20) +
         (sizeof(Diagnostics) << 30) + (sizeof(Options) << 40) + (sizeof(StateTensor) << 50) +
         sizeof(ArchiveInfo) * 7 + sizeof(std::string) * 13;
}

struct Api {
  uint32_t abi_version;
  uint64_t layout;
  const char* libtorch_version;  // "1.13.0"
  int64_t min_format_version;    // the TorchScript file format versions this LibTorch reads
  int64_t max_format_version;
  // Both return false with errors in `diags` (reported against `path`).
  bool (*load_model)(const std::string& path, const ArchiveInfo& archive, const Options& options,
                     ir::Graph& out, Diagnostics& diags);
  bool (*read_state_dict)(const std::string& path, const ArchiveInfo& archive,
                          std::vector<StateTensor>& out, Diagnostics& diags);
};

using EntryPoint = const Api* (*)();

}  // namespace zoc::torchscript::plugin
