// From a model path to a verified, typed graph: picks the frontend by file type, then runs
// shape inference and the verifier. Every subcommand of `zoc` starts here.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/yaml/yaml_frontend.h"
#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"
#include "compiler/weights/weights.h"

namespace zoc {

struct LoadOptions {
  yaml::Options yaml;
  // `--input CxHxW`: replaces the model's input dimensions before shape inference (TorchScript:
  // required; ONNX: required where the model leaves a dimension dynamic, and must agree with
  // those it fixes).
  std::optional<std::array<int64_t, 3>> input_dims;
  // ONNX: graph inputs bound to constants, as serialized TensorProtos (onnx::Options).
  std::vector<std::pair<std::string, std::string>> bound_inputs;
  // `--freeze GLOB`: the trainable parameters whose names match one of these (fnmatch) are
  // frozen, as a TorchScript parameter with requires_grad=False is (ir::ParamSpec::frozen). A
  // pattern that matches none is an error: a typo must not train what it meant to keep.
  std::vector<std::string> freeze;
};

// A verified model and the weights its file carries, if it carries any (an ONNX model's
// initializers; YAML and TorchScript models leave them to --weights and extract-weights).
struct LoadedModel {
  ir::Graph graph;
  std::optional<Weights> weights;
  // A QDQ ONNX model's activation scales, by the names of `graph`'s values (before the passes).
  std::map<std::string, float> int8_scales;
};

// Where a command's weights come from, and how strictly they are read.
struct WeightChoice {
  std::string model;    // the model file, for messages
  std::string weights;  // --weights, or empty
  bool strict = false;  // --strict: NaN or Inf in the weights is an error
  uint64_t seed = 0;    // --seed of the seeded initialization
};

// Weights from `c.weights`, else those the model file carries (an ONNX model's initializers, a
// TorchScript module's state_dict), else seeded initialization (PyTorch's defaults unless layers
// declare an `init`); nullopt with located errors.
std::optional<Weights> weights_for(const LoadedModel& m, const WeightChoice& c, Diagnostics& diags);

std::optional<LoadedModel> load_model_and_weights(const std::string& path, Diagnostics& diags,
                                                  const LoadOptions& options = {});

// The same, for callers that take weights from elsewhere.
std::optional<ir::Graph> load_verified_model(const std::string& path, Diagnostics& diags,
                                             const LoadOptions& options = {});

// Sets options.input_dims to the sample dims of the [N, C, H, W] float array in `npy` (`zoc run`
// on a TorchScript or ONNX model); false, with that file's error, where it has none to give.
bool input_dims_from_npy(const std::string& npy, LoadOptions& options, Diagnostics& diags);

// Whether `path` names a file of that frontend (by extension).
bool is_torchscript_file(const std::string& path);
bool is_onnx_file(const std::string& path);

}  // namespace zoc
