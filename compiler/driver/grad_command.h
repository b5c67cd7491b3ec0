// `zoc grad`: one training step's loss and parameter gradients with the reference interpreter,
// from a batch file in the format tools/train/grad_reference.py writes, into a safetensors file
// of the same layout, so that the two can be compared tensor by tensor (issue 8's oracle for the
// generated trainer). The step is the model's training graph (passes/build_training_graph.cpp,
// without the optimizer) run by ref::run_training.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc {

// Reads `input` (F32 [N, C, H, W]) and `labels` (I32 or I64 [N]) from batch_path, runs
// `training` (a training graph) with `weights`, and writes out_path: `loss` [1], `logits`
// [N, classes], `grad.<name>` per parameter and `after.<name>` per BatchNorm running statistic,
// all F32. Returns a one-line summary.
Expected<std::string> run_grad_command(const ir::Graph& training, const Weights& weights,
                                       const std::string& batch_path, const std::string& out_path);

}  // namespace zoc
