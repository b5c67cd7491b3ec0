// The int8 scales file (issue 35): one activation scale per value of the optimized graph, named
// as the IR names values (`zoc ir --optimize`: a node's output by the node, the model input
// "input"), written by `zoc calibrate` and read by `zoc run --int8-scales`.
//
// It is a safetensors file of float32 scalars whose metadata says what it is
// ("format": "zoc-int8-scales", the method, the model), so that it is read by the same
// validated reader as the weights (and, later, by the generated code's loader), not by a parser
// of its own. The scales become attributes of the int8 layers, which `zoc ir` prints exactly
// (the model hash covers the printed graph).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc::quant {

inline constexpr const char* kScalesFormat = "zoc-int8-scales";

// Whether s can be an int8 scale: a normal float in [1e-30, 1e30] (the IR's attribute range; a
// subnormal scale would break the exact re-quantization of q * s). Every reader of scales (this
// file's, the QDQ import, the quantize-int8 pass) checks it, with kScaleRange in the message.
inline bool usable_scale(float s) { return std::isnormal(s) && s >= 1e-30f && s <= 1e30f; }
inline constexpr const char* kScaleRange = "scales must be normal floats in [1e-30, 1e30]";

struct Int8Scales {
  std::map<std::string, float> scales;  // value name -> scale (> 0, finite)
  std::string method;                   // how they were chosen: "entropy", "percentile 99.99"...
  std::string model;                    // the graph's name, as a check for the reader
  // Convolutions (node names) that calibration measured too sensitive for int8 (zoc calibrate
  // --max-error), most sensitive first; the metadata's "float_layers", one name per line.
  std::vector<std::string> float_layers;
};

// Reads and validates `path`: the metadata's format, one finite positive float32 scalar ([] or
// [1]) per tensor. Errors name the file and the tensor.
Expected<Int8Scales> read_scales(const std::string& path);

// Writes `s` (atomically: a reader never sees half a file); a float layer whose name holds a
// line break is an error.
Status write_scales(const Int8Scales& s, const std::string& path);

}  // namespace zoc::quant
