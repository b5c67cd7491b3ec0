// One training step's loss and parameter gradients on the CPU: the oracle of zoc's generated
// trainer (issue 8), as run() in interpreter.h is the oracle of its inference code.
//
// The step is the one tools/train/grad_reference.py takes with PyTorch autograd, and the one
// the trainers take before their optimizer: BatchNorm in training mode (batch mean and biased
// variance to normalize; running averages updated with the layer's momentum and the unbiased
// variance), dropout as the identity (no other implementation can draw PyTorch's masks), softmax
// cross-entropy averaged over the batch on the graph's output (on a final Softmax layer's input,
// if the model ends with one), then backward through every layer. Weight decay is not part of
// the gradient: SGD adds it in the update. The graph is taken as the frontend wrote it, before
// the inference passes (which fold BatchNorm away).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/graph.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc::ref {

struct StepResult {
  double loss = 0.0;
  Tensor logits;  // [N, classes]
  // Every trainable parameter's gradient, by state_dict name.
  std::map<std::string, std::vector<float>> grads;
  // BatchNorm running_mean / running_var after the step, by state_dict name.
  std::map<std::string, std::vector<float>> buffers;
};

// `labels` holds one class index per sample, each below the graph's output features.
Expected<StepResult> train_step(const ir::Graph& graph, const Weights& weights,
                                const Tensor& input, const std::vector<int32_t>& labels);

}  // namespace zoc::ref
