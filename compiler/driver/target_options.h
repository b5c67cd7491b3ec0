// zoc's target options and --input dimensions as the backend and the loader take them (split
// from main.cpp: the command line's meaning, apart from its parsing).
#pragma once

#include <optional>
#include <string>

#include "compiler/backend/cudnn/emitter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/support/diagnostics.h"

namespace zoc {

// compile's target options as written on the command line.
struct TargetArgs {
  std::string precision;   // fp32|tf32|fp16|bf16
  std::string conv_api;    // auto|legacy|graph
  std::string linear_api;  // cublas|cudnn
  std::string layout;      // auto|nchw|nhwc
  std::string streams;     // auto|1|2
  std::string depthwise;   // zoc|cudnn
  int pad_input_channels = 4;
  bool train = false;
  std::string command_line;
};

// The backend's options, or nullopt after an error (an unknown precision).
std::optional<cudnn::EmitOptions> emit_options(const TargetArgs& args, Diagnostics& diags);

// --input CxHxW into opts.input_dims (nothing when `text` is empty); false after an error.
bool parse_input_dims(const std::string& text, LoadOptions& opts, Diagnostics& diags);

}  // namespace zoc
