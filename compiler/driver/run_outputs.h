// How `zoc run` writes a model's outputs: one .npy per output. A model with one output writes the
// file --output names; a model with several (a segmentation network's `out` and `aux`, a class
// map beside its logits) writes one file per output beside it, named after the output's layer:
// `--output y.npy` gives y_out.npy and y_aux.npy. Layer names come from model files, so they pass
// through a file-name sanitizer first, and two outputs whose names would collide are an error
// rather than one file overwriting the other.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "zoc/core/expected.h"

namespace zoc {

// The file of each of g's outputs, in order, for `--output base` (a path ending in .npy or not).
Expected<std::vector<std::string>> output_files(const ir::Graph& g, const std::string& base);

}  // namespace zoc
