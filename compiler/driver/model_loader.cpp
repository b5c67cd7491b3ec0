// Frontend dispatch, shape inference and verification (see model_loader.h).
#include "compiler/driver/model_loader.h"

#include <filesystem>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"

namespace zoc {

std::optional<ir::Graph> load_verified_model(const std::string& path, Diagnostics& diags,
                                             const LoadOptions& options) {
  const std::string ext = std::filesystem::path(path).extension().string();
  const char* keys[] = {"channels", "height", "width"};
  if (options.input_dims) {
    for (int i = 0; i < 3; ++i) {
      const int64_t v = (*options.input_dims)[i];
      if (v < 1 || v > (1 << 20)) {
        diags.error(SourceLoc{"--input", 0, 0},
                    fmt::format("input {} must be between 1 and {}, got {}", keys[i], 1 << 20, v));
        return std::nullopt;
      }
    }
  }
  std::optional<ir::Graph> graph;
  if (ext == ".yaml" || ext == ".yml") {
    graph = yaml::load_model(path, diags, options.yaml);
  } else if (ext == ".pt" || ext == ".pth") {
    // TorchScript (a build without LibTorch says so; see torchscript_frontend.h).
    if (!options.yaml.overrides.empty()) {
      diags.error(SourceLoc{"--set", 0, 0},
                  "--set applies to YAML models; a .pt file has no params");
      return std::nullopt;
    }
    torchscript::Options ts;
    ts.input_dims = options.input_dims;
    graph = torchscript::load_model(path, ts, diags);
  } else {
    diags.error(SourceLoc{path, 0, 0},
                fmt::format("unknown model file type '{}': expected .yaml or .pt", ext));
    return std::nullopt;
  }
  if (!graph) return std::nullopt;
  if (options.input_dims) {
    for (ir::Node& n : graph->nodes) {
      if (n.op != ir::OpKind::Input) continue;
      for (int i = 0; i < 3; ++i) {
        n.attrs.set(keys[i], ir::AttrValue{ir::AttrKind::Int, (*options.input_dims)[i], {}, 0});
      }
    }
  }
  ir::VerifyOptions untyped;
  untyped.require_types = false;
  if (!ir::verify(*graph, diags, untyped)) return std::nullopt;
  if (!ir::infer_shapes(*graph, diags)) return std::nullopt;
  if (!ir::verify(*graph, diags)) return std::nullopt;
  return graph;
}

}  // namespace zoc
