// Frontend dispatch, shape inference and verification (see model_loader.h).
#include "compiler/driver/model_loader.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/frontend/onnx/onnx_frontend.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"
#include "compiler/support/sanitize.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace {

std::string extension(const std::string& path) {
  return std::filesystem::path(path).extension().string();
}

// The frontend's graph, untyped, and the weights the file carries.
std::optional<LoadedModel> run_frontend(const std::string& path, Diagnostics& diags,
                                        const LoadOptions& options) {
  const std::string ext = extension(path);
  if (ext == ".yaml" || ext == ".yml") {
    auto g = yaml::load_model(path, diags, options.yaml);
    if (!g) return std::nullopt;
    return LoadedModel{std::move(*g), std::nullopt, {}};
  }
  if (!options.yaml.overrides.empty() && (is_torchscript_file(path) || is_onnx_file(path))) {
    diags.error(SourceLoc{"--set", 0, 0},
                fmt::format("--set applies to YAML models; a {} file has no params", ext));
    return std::nullopt;
  }
  if (is_torchscript_file(path)) {
    // TorchScript (a build without LibTorch says so; see torchscript_frontend.h).
    torchscript::Options ts;
    ts.input_dims = options.input_dims;
    auto g = torchscript::load_model(path, ts, diags);
    if (!g) return std::nullopt;
    return LoadedModel{std::move(*g), std::nullopt, {}};
  }
  if (is_onnx_file(path)) {
    onnx::Options o;
    o.input_dims = options.input_dims;
    o.bound_inputs = options.bound_inputs;
    auto m = onnx::load_model(path, o, diags);
    if (!m) return std::nullopt;
    return LoadedModel{std::move(m->graph), std::move(m->weights), std::move(m->int8_scales)};
  }
  diags.error(SourceLoc{path, 0, 0},
              fmt::format("unknown model file type '{}': expected .yaml, .pt or .onnx", ext));
  return std::nullopt;
}

// --freeze: marks each trainable parameter whose name matches a pattern on its layer
// (Node::frozen), which the next shape inference turns into ParamSpec::frozen.
bool freeze_parameters(ir::Graph& graph, const std::vector<std::string>& patterns,
                       Diagnostics& diags) {
  for (const std::string& pattern : patterns) {
    size_t matched = 0;
    for (ir::Node& n : graph.nodes) {
      for (const ir::ParamSpec& p : n.params) {
        if (!p.trainable || fnmatch(pattern.c_str(), p.name.c_str(), 0) != 0) continue;
        ++matched;
        if (std::find(n.frozen.begin(), n.frozen.end(), p.name) == n.frozen.end()) {
          n.frozen.push_back(p.name);
        }
      }
    }
    if (matched == 0) {
      diags.error(SourceLoc{"--freeze", 0, 0},
                  fmt::format("'{}' matches no trainable parameter of model '{}' (names are the "
                              "state_dict's, as `zoc ir` prints them: 'layer1.0.conv1.weight')",
                              shown_text(pattern), shown_text(graph.name)));
    }
  }
  return !diags.has_errors();
}

}  // namespace

// A .npy that is unreadable or not 4-D gets the error `zoc run` gives it for any model, not the
// missing --input CxHxW that a TorchScript model would otherwise report.
bool input_dims_from_npy(const std::string& npy, LoadOptions& options, Diagnostics& diags) {
  std::vector<int64_t> shape;
  auto x = npy::read_float32(npy, &shape);
  if (!x) {
    diags.file_error(npy, x.error().message);
    return false;
  }
  if (shape.size() != 4 || shape[0] < 1) {
    diags.error(SourceLoc{npy, 0, 0},
                fmt::format("the array has shape {}, but the model takes an image batch "
                            "(N, C, H, W) with N >= 1",
                            st::detail::shape_string(shape, /*python=*/true)));
    return false;
  }
  options.input_dims = std::array<int64_t, 3>{shape[1], shape[2], shape[3]};
  return true;
}

bool is_torchscript_file(const std::string& path) {
  const std::string ext = extension(path);
  return ext == ".pt" || ext == ".pth";
}

bool is_onnx_file(const std::string& path) { return extension(path) == ".onnx"; }

std::optional<LoadedModel> load_model_and_weights(const std::string& path, Diagnostics& diags,
                                                  const LoadOptions& options) {
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
  auto model = run_frontend(path, diags, options);
  if (!model) return std::nullopt;
  ir::Graph& graph = model->graph;
  if (options.input_dims) {
    for (ir::Node& n : graph.nodes) {
      if (n.op != ir::OpKind::Input) continue;
      for (int i = 0; i < 3; ++i) {
        n.attrs.set(keys[i], ir::AttrValue{ir::AttrKind::Int, (*options.input_dims)[i], {}, 0});
      }
    }
  }
  ir::VerifyOptions untyped;
  untyped.require_types = false;
  if (!ir::verify(graph, diags, untyped)) return std::nullopt;
  if (!ir::infer_shapes(graph, diags)) return std::nullopt;
  if (!options.freeze.empty()) {
    if (!freeze_parameters(graph, options.freeze, diags)) return std::nullopt;
    if (!ir::infer_shapes(graph, diags)) return std::nullopt;
  }
  if (!ir::verify(graph, diags)) return std::nullopt;
  return model;
}

std::optional<ir::Graph> load_verified_model(const std::string& path, Diagnostics& diags,
                                             const LoadOptions& options) {
  auto model = load_model_and_weights(path, diags, options);
  if (!model) return std::nullopt;
  return std::move(model->graph);
}

namespace {

// A TorchScript module's own state_dict, read by LibTorch and checked as a weights file is (in
// memory: nothing is written), with its "format": "pt" (layers no output uses noted, not refused).
std::optional<Weights> module_weights(const ir::Graph& graph, const std::string& model,
                                      const LoadWeightsOptions& opts, Diagnostics& diags) {
  auto tensors = torchscript::read_state_dict(model, diags);
  if (!tensors) return std::nullopt;
  auto bytes = torchscript::encode_state_dict(*tensors, model);
  if (!bytes) {
    diags.file_error(model, bytes.error().message);
    return std::nullopt;
  }
  auto file = st::File::from_bytes(std::move(*bytes), model);
  if (!file) {
    diags.file_error(model, file.error().message);
    return std::nullopt;
  }
  return load_weights(graph, *file, model, diags, opts);
}

}  // namespace

std::optional<Weights> weights_for(const LoadedModel& m, const WeightChoice& c,
                                   Diagnostics& diags) {
  if (c.weights.empty() && m.weights) {
    if (c.strict) {
      for (const auto& [name, values] : m.weights->tensors) {
        if (std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); })) {
          continue;
        }
        diags.error(
            SourceLoc{c.model, 0, 0},
            fmt::format("tensor '{}' holds NaN or infinite values (--strict)", shown_text(name)));
      }
      if (diags.has_errors()) return std::nullopt;
    }
    return m.weights;
  }
  LoadWeightsOptions opts;
  opts.strict = c.strict;
  if (c.weights.empty() && is_torchscript_file(c.model)) {
    return module_weights(m.graph, c.model, opts, diags);
  }
  if (c.weights.empty()) return init_weights(m.graph, c.seed);
  return load_weights(m.graph, c.weights, diags, opts);
}

}  // namespace zoc
