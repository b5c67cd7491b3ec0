// lower-to-target: the last step of the inference pipeline, where an optimized graph becomes the
// target's. It decides, and writes onto the IR (compiler/ir/lowering.h):
//   - the order the target runs the nodes in (side branches hoisted beside the main branch);
//   - per value: its dtype and layout (its TensorType), its stored channels (a padded input),
//     its slot in the activation arena (the one memory planner, memory_plan.h) and its stream;
//   - per node: the runtime layer that runs it, where its epilogue activation runs, how its
//     weights are packed and where they lie, and the side branches it starts or joins;
//   - for the graph: the arena's and the weights' sizes and the choices it was lowered with.
// The rules are written here once over the target's settings (target_desc.h), so that
// `--print-ir-after=lower-to-target` and `--verify-each` see every decision, and a backend only
// prints the lowered graph. docs/lowering.md walks through the rules and the printed result.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/lower/target_desc.h"
#include "compiler/support/diagnostics.h"

namespace zoc::lower {

// Lowers an optimized inference graph (every conv a fused_conv2d, no dropout). Constructs the
// target cannot run are reported against their layers, every one; false then, and the graph is
// left partly lowered (do not use it).
bool lower_to_target(ir::Graph& g, const TargetDesc& target, Diagnostics& diags);

// The layer kind and epilogue of every node (choose_layers.cpp), given the side branch each node
// runs as (-1: main stream) and the input's stored channels. False after reporting a node the
// target cannot run.
bool choose_layers(ir::Graph& g, const TargetDesc& target, const std::vector<int>& side_of,
                   int64_t input_stored_channels, Diagnostics& diags);

// Whether a max or average pooling needs zoc's kernel (ceil_mode windows hanging over the padded
// input, dilated max pooling) instead of cuDNN's: the inference layers' and the trainer's rule.
bool pool_needs_kernel(const ir::Node& n);

// Why cuDNN cannot run transposed convolution n (null where it can): the inference layers' and
// the trainer's rule.
const char* conv_transpose_refusal(const ir::Node& n);

}  // namespace zoc::lower
