// The reference interpreter: runs any verified graph on the CPU in float32, NCHW.
//
// It is the oracle of zoc: CI has no GPU, so the claim that a frontend or a pass preserves a
// model's meaning is checked by running the graph here before and after, and against PyTorch's
// own outputs. It favours clarity and accuracy (double accumulation in the kernels) over speed.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc::ref {

// A dense float32 tensor whose shape includes the batch dimension.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Runs `graph` on `input` ([N, C, H, W] matching the graph's input type) and returns its
// outputs. Fails with a message if the input shape or a weight tensor does not match.
Expected<std::vector<Tensor>> run(const ir::Graph& graph, const Weights& weights,
                                  const Tensor& input);

}  // namespace zoc::ref
