// `zoc extract-weights`: a model file's weights as safetensors, for --weights and the generated
// runner (split from main.cpp, which only parses the command line).
#pragma once

#include <string>

#include "compiler/driver/model_loader.h"
#include "compiler/support/diagnostics.h"

namespace zoc {

// model.onnx: the initializers the model's layers take, under the IR's parameter names
// (state_dict names where the exporter kept them). False after an error (in diags).
bool extract_onnx_weights(const std::string& model, const std::string& output,
                          const LoadOptions& opts, Diagnostics& diags);

// model.pt: the module's whole state_dict under its names ("format": "pt" in the file's
// metadata, so that layers no output uses are ignored with a note when it is loaded).
bool extract_state_dict(const std::string& model, const std::string& output, Diagnostics& diags);

}  // namespace zoc
