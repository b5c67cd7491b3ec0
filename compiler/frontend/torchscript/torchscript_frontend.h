// The TorchScript frontend: a `.pt` file written by torch.jit.save (scripted or traced) to the
// same IR the YAML frontend builds, and its state_dict to safetensors.
//
// The work is done by LibTorch, which is large: linking it costs every process that merely
// starts zoc about half a second, and zoc's test suite starts it hundreds of times for YAML
// models. So LibTorch lives in a plugin (libzoc_frontend_torchscript.so, built when CMake finds
// LibTorch) that these functions load with dlopen the first time a `.pt` file is read. This
// header and its implementation (frontend.cpp, archive.cpp) do not include LibTorch: they check
// the file (a complete, well-formed zip archive laid out as torch.jit.save writes it, whose
// pickles name only TorchScript's own globals, with a readable version record; archive.h)
// before loading anything, and a build without LibTorch says so plainly.
// The translation itself is described in translate.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"
#include "zoc/io/safetensors.h"

namespace zoc::torchscript {

struct Options {
  // Channels, height and width of the input (`--input CxHxW`): a TorchScript module has no
  // static input shape, so this is required.
  std::optional<std::array<int64_t, 3>> input_dims;
};

// Whether this build can read TorchScript (CMake found LibTorch).
bool built_with_libtorch();

// Whether this process has tried to load the plugin (and so LibTorch). That happens only for a
// file that passed the archive checks; the tests use it to show that a refused file ran nothing.
bool plugin_load_attempted();

// The LibTorch version the plugin was built against ("1.13.0"), and the TorchScript file
// format versions it reads; empty/0 if the plugin is unavailable.
struct LibTorchInfo {
  std::string version;
  int64_t min_format_version = 0;
  int64_t max_format_version = 0;
};
std::optional<LibTorchInfo> libtorch_info(Diagnostics& diags);

// Loads `path`, runs `forward` symbolically on an input of `options.input_dims` and returns
// the untyped graph (run ir::infer_shapes next), or nullopt with errors in `diags`: every
// unsupported operation in one error, each with its module path and source position.
std::optional<ir::Graph> load_model(const std::string& path, const Options& options,
                                    Diagnostics& diags);

// One tensor of a module's state_dict: raw little-endian bytes.
struct StateTensor {
  std::string name;  // as PyTorch prints it: "layer1.0.bn1.running_var"
  st::DType dtype = st::DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// The module's parameters and persistent buffers under their state_dict names, floating
// tensors converted to float32 and integer ones (num_batches_tracked) kept as they are.
std::optional<std::vector<StateTensor>> read_state_dict(const std::string& path,
                                                        Diagnostics& diags);

// Writes a state_dict as safetensors (metadata {"format": "pt"}, as PyTorch's tools write it).
Status write_state_dict(const std::vector<StateTensor>& tensors, const std::string& out_path);
// The same file's bytes in memory (st::encode); errors start with `label`.
Expected<std::vector<uint8_t>> encode_state_dict(const std::vector<StateTensor>& tensors,
                                                 const std::string& label);

}  // namespace zoc::torchscript
