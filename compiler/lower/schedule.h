// Concurrency: which layers run on a second stream (lower-to-target's first step, when the
// target asks for a side stream).
//
// At small batch sizes one ResNet layer does not fill an H100, so the bottleneck's downsample
// convolution can run beside the main branch (conv1, conv2) instead of after it. A *side branch*
// is a fused convolution D whose only input X is also read by another layer, and whose output
// is read once, as the residual of a later fused convolution J. The schedule moves D just before
// the first other reader of X (the fork) and records J (the join); the lowering marks D as a
// side branch and J as its join, the memory plan keeps X alive until J, and the cuDNN backend
// runs D on the side stream between an event recorded on the main stream and one the main
// stream waits for before J.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::lower {

struct SideBranch {
  int node = -1;  // D, in the scheduled graph
  int join = -1;  // J, the node whose residual input is D's output
};

// The graph in emission order, side branches hoisted; *branches lists them in that order.
ir::Graph schedule_side_branches(const ir::Graph& g, std::vector<SideBranch>* branches);

}  // namespace zoc::lower
