// From a model path to a verified, typed graph: picks the frontend by file type, then runs
// shape inference and the verifier. Every subcommand of `zoc` starts here.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "compiler/frontend/yaml/yaml_frontend.h"
#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc {

struct LoadOptions {
  yaml::Options yaml;
  // `--input CxHxW`: replaces the model's input dimensions before shape inference.
  std::optional<std::array<int64_t, 3>> input_dims;
};

std::optional<ir::Graph> load_verified_model(const std::string& path, Diagnostics& diags,
                                             const LoadOptions& options = {});

}  // namespace zoc
