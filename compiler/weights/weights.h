// Model weights as the compiler sees them: one float32 array per parameter, keyed by its
// PyTorch state_dict name.
//
// Weights come from a safetensors file (validated tensor by tensor against what each layer
// declares it needs) or from seeded initialization that follows PyTorch's documented defaults,
// so that "no weights given" still means a well-defined, reproducible model.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"
#include "zoc/io/safetensors.h"
#include "zoc/weights/init.h"

namespace zoc {

struct Weights {
  // Floating parameters, converted to float32. Integer buffers (num_batches_tracked) are
  // validated on load but not kept: inference does not read them.
  std::map<std::string, std::vector<float>, std::less<>> tensors;

  const std::vector<float>* find(std::string_view name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

struct LoadWeightsOptions {
  bool strict = false;  // NaN/Inf values are errors instead of warnings
};

// Reads `path` and checks it against every parameter the graph declares: missing, extra,
// wrong dtype, wrong shape, non-finite values. Reports all problems; nullopt on any error.
std::optional<Weights> load_weights(const ir::Graph& graph, const std::string& path,
                                    Diagnostics& diags, const LoadWeightsOptions& options = {});
// The same checks on a safetensors file already in memory (st::File::from_bytes); `path` names
// it in messages.
std::optional<Weights> load_weights(const ir::Graph& graph, const st::File& file,
                                    const std::string& path, Diagnostics& diags,
                                    const LoadWeightsOptions& options = {});

// How one parameter is drawn without a weights file: a zoc/weights/init.h rule and the fan it takes
// (fan_in for kUniformFanIn, fan_out for kNormalFanOut, 0 for the constants). The one place
// that maps a ParamSpec's InitScheme and role to a rule; `zoc init-weights`, `zoc run`,
// `zoc grad` and the generated trainer all ask it.
struct InitChoice {
  InitRule rule = InitRule::kUniformFanIn;
  int64_t fan = 0;
  bool operator==(const InitChoice&) const = default;
};
// `param` must be one of `node.params` (its fans come from the node's weight tensor:
// fan_in = numel / shape[0], fan_out = numel / shape[1], as torch.nn.init computes them).
InitChoice init_choice(const ir::Node& node, const ir::ParamSpec& param);

// The rule as C++ source for generated code: "zoc::InitRule::kNormalFanOut".
const char* init_rule_cpp(InitRule rule);

// Seeded initialization of every float parameter by init_choice(): PyTorch's defaults unless a
// layer declares another `init`. The same seed gives the same bytes on every platform.
Weights init_weights(const ir::Graph& graph, uint64_t seed);

// Writes the weights as safetensors with state_dict names (float32, plus num_batches_tracked
// as int64 zeros where the graph declares it), loadable by PyTorch's load_state_dict.
Status save_weights(const ir::Graph& graph, const Weights& weights, const std::string& path);

}  // namespace zoc
