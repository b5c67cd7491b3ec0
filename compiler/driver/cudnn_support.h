// What the cuDNN backend cannot compile yet, refused before it runs. The backend is being
// restructured (a lower-to-target step will own this question); until its kernels for the ops of
// issues 36 and 37 exist, `zoc compile` checks the graph here so that such a model gets one
// located error per layer ("the cuDNN backend does not support upsample_nearest yet") instead of
// the emitter's generic refusal or, for a new form of an op it knows (a broadcasting add, a
// BatchNorm without affine parameters), code that computes something else.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc {

// Reports every layer of `g` (typed) that the cuDNN backend cannot compile yet, and several
// model outputs; false if there was any.
bool check_cudnn_support(const ir::Graph& g, Diagnostics& diags);

}  // namespace zoc
