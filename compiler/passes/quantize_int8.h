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

// What else decides the plan besides the scales.
struct Int8Choices {
  // A QDQ model's scales: a layer its tool left unquantized has no pair in front of it, so a
  // convolution with an unscaled input stays float instead of being an error.
  bool unscaled_stay_float = false;
  // Convolutions to keep float whatever their eligibility, by node name, each with the reason
  // the plan prints (zoc calibrate --max-error's measured choice). A name that is not a fused
  // convolution of the graph is an error: the choice was made on another model.
  std::map<std::string, std::string> keep_float;
};

// Scales by value name (Graph::value_name: the producing node's name, "input" for the model
// input). A missing scale for a value an eligible convolution reads is a located error, unless
// `choices.unscaled_stay_float`.
bool quantize_int8(ir::Graph& g, const std::map<std::string, float>& scales, Int8Plan& plan,
                   Diagnostics& diags, const Int8Choices& choices = {});

}  // namespace zoc::passes
