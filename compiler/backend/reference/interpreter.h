// The reference interpreter: runs any verified graph on the CPU in float32, NCHW: a model's
// graph before or after the inference passes, or its training graph
// (passes/build_training_graph.cpp), every node through one switch over the op table.
//
// It is the oracle of zoc: CI has no GPU, so the claim that a frontend or a pass preserves a
// model's meaning is checked by running the graph here before and after, and against PyTorch's
// own outputs; a training graph run here is the oracle of the generated trainer (`zoc grad`
// against PyTorch autograd). It favours clarity and accuracy (double accumulation in the
// kernels) over speed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc::ref {

// A dense float32 tensor whose shape includes the batch dimension (a non-batched value's is its
// own shape).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Sees every value of a run as soon as it is computed, the model input first (what `zoc
// calibrate` records); the tensor is freed after its last reader.
using Observer = std::function<void(ir::ValueId, const Tensor&)>;

// Runs `graph` on `input` ([N, C, H, W] matching the graph's input type) and returns its
// outputs. Fails with a message if the input shape or a weight tensor does not match.
Expected<std::vector<Tensor>> run(const ir::Graph& graph, const Weights& weights,
                                  const Tensor& input, const Observer& observe = {});

// The run-time values of a training graph's sgd nodes: PyTorch's SGD (dampening 0, no
// Nesterov): d = grad + weight_decay * w; v = momentum * v + d; w -= lr * v, in float.
struct RunOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  // Momentum buffers by parameter name; absent ones start at zero (PyTorch's first step).
  std::map<std::string, std::vector<float>> momentum_buffers;
};

// One training step's named results.
struct TrainingResult {
  double loss = 0.0;  // the batch mean, as computed (in double)
  Tensor logits;      // [N, classes]
  // Every trainable parameter's gradient (grad.<name>), by state_dict name.
  std::map<std::string, std::vector<float>> grads;
  // BatchNorm running_mean / running_var after the step (a training-mode BatchNorm's side
  // effect), by state_dict name.
  std::map<std::string, std::vector<float>> buffers;
  // The sgd nodes' results (updated.<name>) and momentum buffers, by parameter name.
  std::map<std::string, std::vector<float>> updated;
  std::map<std::string, std::vector<float>> momentum_buffers;
};

// Runs a training graph on a batch: `input` as for run(), `labels` one class index per sample,
// each below the logits' size. Fails with a message on a mismatched input, labels or weights.
Expected<TrainingResult> run_training(const ir::Graph& graph, const Weights& weights,
                                      const Tensor& input, const std::vector<int32_t>& labels,
                                      const RunOptions& options = {});

}  // namespace zoc::ref
