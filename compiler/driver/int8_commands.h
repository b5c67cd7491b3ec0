// INT8 on the command line (issue 35): `zoc calibrate` chooses the activation scales of a
// model's optimized graph from samples run on the reference interpreter, and `zoc run
// --int8-scales` / `zoc ir --int8-scales` apply a scales file (the quantize-int8 pass) and print
// the mixed plan it chose.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/driver/int8_sensitivity.h"
#include "compiler/ir/graph.h"
#include "compiler/quant/scales.h"
#include "compiler/support/diagnostics.h"
#include "compiler/weights/weights.h"
#include "zoc/core/expected.h"

namespace zoc {

struct CalibrateOptions {
  std::vector<std::string> samples;  // .npy files [N, C, H, W], or folders of them
  std::string method = "entropy";    // max | percentile | entropy
  double percentile = 99.99;
  int64_t batch = 16;      // images per interpreter run
  int64_t max_images = 0;  // 0: every image of the samples
  // The mixed plan (int8_sensitivity.h): > 0 keeps the most sensitive convolutions float until
  // the outputs' relative L2 error is at most this, measured on the first images of the samples.
  double max_error = 0;
  int64_t sensitivity_images = 64;
};

// The scales of every value a convolution of `optimized` reads (its input or residual), from
// two passes over the samples: the largest magnitude, then a histogram up to it.
Expected<quant::Int8Scales> calibrate(const ir::Graph& optimized, const Weights& weights,
                                      const CalibrateOptions& options);

// `zoc calibrate`: calibrate(), then choose_mixed_plan() where options.max_error is not 0, writes
// the scales file at `output` and prints what it chose to stdout; errors go to `diags`.
void calibrate_command(const ir::Graph& optimized, const Weights& weights,
                       const CalibrateOptions& options, const std::string& output,
                       Diagnostics& diags);

// zoc calibrate --max-error: measures each convolution's sensitivity on the samples' first
// options.sensitivity_images images and records the convolutions to keep float in `scales`.
Expected<MixedPlanChoice> choose_mixed_plan(const ir::Graph& optimized, const Weights& weights,
                                            const CalibrateOptions& options,
                                            quant::Int8Scales& scales);

// Reads the scales file at `path` and quantizes `optimized` with it (passes/quantize_int8.h),
// printing the plan to `plan_out`; false with diagnostics on an unreadable file, a scale the
// graph needs and the file lacks, or a graph the verifier rejects.
bool apply_int8_scales(ir::Graph& optimized, const std::string& path, std::ostream& plan_out,
                       Diagnostics& diags);

// The same with a QDQ model's own scales, named as the values were before the passes: a fused
// layer's output is the last layer it fused (Node::fused_from).
bool apply_model_int8_scales(ir::Graph& optimized, const std::map<std::string, float>& scales,
                             std::ostream& plan_out, Diagnostics& diags);

}  // namespace zoc
