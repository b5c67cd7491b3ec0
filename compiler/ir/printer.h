// The IR's readable text form (`zoc ir MODEL`, `--print-ir-after=PASS`).
//
// One line per node: value, op, operands, attributes, result type, parameters and the source
// location, so a user can map every line back to their model file.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace zoc::ir {

struct PrintOptions {
  bool locations = true;  // append "# file:line:col"
  bool params = true;     // list parameter tensors under each node
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});

// "conv2d{out_channels=64, kernel=7x7, ...}" style attribute list.
std::string format_attrs(const Node& node);

}  // namespace zoc::ir
