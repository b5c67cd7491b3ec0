// Pass quantize-int8 (issue 35): turns the optimized graph's convolutions into int8 ones, given
// one activation scale per value (what `zoc calibrate` writes, or an ONNX QDQ model's scales).
//
// It runs after the inference passes, on the fused convolutions, and is not in the pipeline's
// list because it needs the scales: the driver runs it when the user gives them. The int8
// semantics (what the interpreter computes, to the GPU's rounding) are in
// backend/reference/int8.cpp; the plan here decides which layers are int8:
// - a fused convolution with no activation or ReLU, one group, reading anything but the model
//   input (the first convolution stays float: in int8 it ran 6x slower than in fp16 on an
//   H200, results/2026-11-29-h200-int8-probe, and its 3 input channels would be padded to 16);
// - its output is int8 where every reader is an int8 convolution (input or residual), and
//   float otherwise (read by pooling, a classifier, a model output...);
// - an int8 convolution's input or residual that no int8 convolution writes is quantized by a
//   `quantize` node, one per value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::passes {

// What the pass did, for the driver to print: the mixed plan.
struct Int8Plan {
  int int8_convs = 0;
  int int8_outputs = 0;    // int8 convolutions whose output is int8
  int quantize_nodes = 0;  // float tensors quantized for an int8 reader
  // Convolutions left float, each with why ("reads the model input", "activation silu").
  std::vector<std::pair<std::string, std::string>> float_convs;
};

// Scales by value name (Graph::value_name: the producing node's name, "input" for the model
// input). A missing scale for a value an eligible convolution reads is a located error, unless
// `unscaled_stay_float` (a QDQ model's scales: a layer its tool left unquantized has no pair in
// front of it), which leaves that convolution float.
bool quantize_int8(ir::Graph& g, const std::map<std::string, float>& scales, Int8Plan& plan,
                   Diagnostics& diags, bool unscaled_stay_float = false);

}  // namespace zoc::passes
