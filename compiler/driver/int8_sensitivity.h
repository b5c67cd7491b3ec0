// The measured half of int8's mixed plan (issue 35: "layers that lose accuracy stay float, where
// measured"). `zoc calibrate --max-error E` runs, on the first images of the samples:
// 1. the fp32 graph, the reference;
// 2. each int8-eligible convolution alone in int8 (the rest float): its sensitivity, the
//    relative L2 distance of the model's outputs from fp32's (the largest over the outputs of a
//    model with several);
// 3. the plans that keep the m most sensitive convolutions float, a binary search for the
//    fewest m whose error is at most E, taking the error to fall as m grows (all float is
//    exact, so some m always meets it; the chosen m meets it and m - 1 does not).
// The images are the calibration samples' first: the error is measured where the scales were
// chosen. Outputs that are not finite are an error, not a sensitivity.
// The chosen names go into the scales file; `zoc run --int8-scales` then keeps them float and
// prints why. The error is measured on the interpreter, whose int8 arithmetic is the GPU's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/graph.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc {

struct LayerError {
  std::string layer;  // a fused convolution's name
  double error = 0;   // the outputs' relative L2 distance from fp32 with it alone in int8
};

struct MixedPlanChoice {
  std::vector<LayerError> layers;         // every int8-eligible convolution, most sensitive first
  double all_int8_error = 0;              // every eligible convolution in int8
  std::vector<std::string> float_layers;  // kept float, most sensitive first
  double chosen_error = 0;                // the chosen plan's error
  int64_t images = 0;                     // images measured
};

// The reason the plan prints for a convolution calibration kept float.
inline constexpr const char* kKeptFloatReason = "calibration measured it sensitive (--max-error)";

// Measures on `images` ([N, ...] of the model's input, N >= 1) and chooses; `max_error` > 0.
// Runs of `batch` images at a time.
Expected<MixedPlanChoice> choose_float_layers(const ir::Graph& optimized, const Weights& weights,
                                              const std::map<std::string, float>& scales,
                                              const ref::Tensor& images, double max_error,
                                              int64_t batch);

}  // namespace zoc
