// Shared pieces of the YAML frontend's implementation files: document loading and located
// scalar reading (document.cpp), block expansion (expand.cpp) and linking (link.cpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "compiler/frontend/yaml/expr.h"
#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::yaml {

// A parsed YAML file.
struct Document {
  std::string path;
  YAML::Node root;
};

SourceLoc loc_of(const std::string& file, const YAML::Node& node);

// Reads and parses one YAML file, reporting syntax errors with their position.
std::optional<Document> load_document(const std::string& path, const SourceLoc& included_from,
                                      Diagnostics& diags);

// The closest candidate by edit distance, for "did you mean" hints ("" if none is close).
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// A located view of a scalar: evaluates `$name`, `${expr}` or a literal integer/boolean.
// `what` names the thing being read for the error message ("attribute 'stride'"), `expected`
// what a literal must be ("an integer"). With `allow_string`, any other literal is a string
// (params, block arguments and `init` take names such as `kaiming_normal_fan_out`).
std::optional<ExprValue> eval_scalar(const std::string& file, const YAML::Node& node,
                                     const ExprEnv& env, const std::string& what,
                                     Diagnostics& diags,
                                     const char* expected = "an integer or a boolean",
                                     bool allow_string = false);
std::optional<int64_t> eval_int(const std::string& file, const YAML::Node& node, const ExprEnv& env,
                                const std::string& what, Diagnostics& diags);
std::optional<bool> eval_bool(const std::string& file, const YAML::Node& node, const ExprEnv& env,
                              const std::string& what, Diagnostics& diags);

// Iterates a mapping, reporting duplicate keys and non-scalar keys. Returns (key, key node,
// value node) triples in file order.
struct MapEntry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};
std::optional<std::vector<MapEntry>> map_entries(const std::string& file, const YAML::Node& map,
                                                 const std::string& what, Diagnostics& diags);

// A weights tensor as a one-input add's, sub's, mul's or div's other operand: its full name, and
// what its key (`tensor`, `parameter`, `buffer`) says it is to PyTorch.
struct TensorOperand {
  std::string name;
  ir::OperandRole role = ir::OperandRole::kUnknown;
};
inline bool is_operand_key(const std::string& key) {
  return key == "tensor" || key == "parameter" || key == "buffer";
}
// Layer entry m, one of those keys, as the operand: the weights file's tensor named relative to
// the layer's scope (`prefix` + name: inside block instance `blocks.0`, `ls1.gamma` is
// `blocks.0.ls1.gamma`), a dotted name of letters, digits, '_' and '-'. nullopt after reporting
// anything else, `op` not taking one, or an operand the layer gave already (`seen`).
std::optional<TensorOperand> tensor_operand(const std::string& file, const MapEntry& m, bool seen,
                                            const std::string& prefix, const std::string& layer,
                                            ir::OpKind op, size_t inputs, Diagnostics& diags);

// A reusable block definition (`blocks:` in a model file or an included file).
struct BlockDef {
  std::string name;
  std::string file;
  YAML::Node layers;
  std::vector<std::pair<std::string, std::optional<YAML::Node>>> params;  // name, default
  SourceLoc loc;
};

// One primitive layer after expansion. Inputs are slots (see link.cpp).
struct LayerInst {
  std::string name;
  ir::OpKind op;
  ir::Attrs attrs;
  std::vector<int> input_slots;
  SourceLoc loc;
  std::string operand_tensor = {};  // `tensor:`, `parameter:`, `buffer:` (ir::Node::operand_tensor)
  ir::OperandRole operand_role = ir::OperandRole::kUnknown;  // ir::Node::operand_role
};

// A name that a layer entry introduces in its scope. It is bound either to the layer that
// produces it or, for groups, blocks and skipped layers, to another slot (an alias).
struct Slot {
  std::string name;
  SourceLoc loc;
  int layer = -1;
  int alias = -1;
};

// The expansion state shared by expand.cpp and link.cpp.
struct Expansion {
  std::map<std::string, BlockDef> blocks;
  std::vector<LayerInst> layers;
  std::vector<Slot> slots;
  ExprEnv globals;  // the model's params, visible in every block
  int64_t node_visits = 0;
  bool budget_exceeded = false;
};

// Expands a `layers:` list under `prefix` whose input is `in_slot`; returns the slot of its
// output, or -1 after reporting errors.
int expand_layers(Expansion& ex, const std::string& file, const YAML::Node& layers,
                  const std::string& prefix, int in_slot, const ExprEnv& env, int depth,
                  std::vector<std::string>& block_stack, Diagnostics& diags,
                  std::map<std::string, int>* scope_out = nullptr);

// Resolves slots, orders layers topologically, rejects cycles and dead layers, and builds the
// graph whose input node is layer 0 and whose outputs are those slots' layers, in order.
std::optional<ir::Graph> link_graph(Expansion& ex, const std::string& model_name,
                                    const std::vector<int>& output_slots, Diagnostics& diags);

}  // namespace zoc::yaml
