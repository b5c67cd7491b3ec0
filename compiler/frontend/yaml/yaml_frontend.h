// The YAML frontend: a model file (models/README.md describes the format) to an IR graph.
//
// It reads the file and its includes, expands parameterised blocks and repetitions into
// layers named like PyTorch's state_dict ("layer1.0.conv1"), resolves references between
// layers, orders them topologically and builds the graph. Every problem is reported against
// the YAML text (`file:line:col: error: ...`), all of them in one run. Shapes are not checked
// here; shape inference runs on the graph afterwards.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::yaml {

struct Options {
  // `--set name=value`: overrides of the model's `params`, applied before expansion.
  std::vector<std::pair<std::string, std::string>> overrides;
};

// Limits that keep hostile files (alias bombs, runaway recursion) from exhausting memory.
inline constexpr int kMaxIncludeDepth = 8;
inline constexpr int kMaxNestingDepth = 32;
inline constexpr int64_t kMaxLayers = 100000;
inline constexpr int64_t kMaxNodeVisits = 2000000;
inline constexpr int64_t kMaxFileBytes = int64_t{16} << 20;  // per file read
inline constexpr int64_t kMaxErrors = 1000;                  // then expansion stops

// Returns the graph (untyped: run ir::infer_shapes next), or nullopt with errors in `diags`.
std::optional<ir::Graph> load_model(const std::string& path, Diagnostics& diags,
                                    const Options& options = {});

}  // namespace zoc::yaml
