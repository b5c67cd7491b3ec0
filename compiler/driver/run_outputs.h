// How `zoc run` writes a model's outputs: one .npy per output. A model with one output writes the
// file --output names; a model with several (a segmentation network's `out` and `aux`, a class
// map beside its logits) writes one file per output beside it, named after the output's layer:
// `--output y.npy` gives y_out.npy and y_aux.npy. Layer names come from model files, so they pass
// through a file-name sanitizer first, and two outputs whose names would collide are an error
// rather than one file overwriting the other. It also prints what it shows on the terminal: the
// top-k classes of each sample.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"
#include "zoc/core/expected.h"

namespace zoc {

// The file of each of g's outputs, in order, for `--output base` (a path ending in .npy or not).
Expected<std::vector<std::string>> output_files(const ir::Graph& g, const std::string& base);

// Whether `shape` is that of a batch of g's input, [N, ...] with N >= 1; else what g takes.
Status check_input_shape(const ir::Graph& g, const std::vector<int64_t>& shape);

// `zoc run`'s input: the .npy at `path` ([N, ...] of the model's input), or a seeded
// standard-normal batch when `path` is empty; nullopt with a located error.
std::optional<ref::Tensor> run_input(const ir::Graph& g, const std::string& path, int64_t batch,
                                     uint64_t seed, Diagnostics& diags);

// Prints the `top_k` largest values of each sample of `out` ([N, ...]) and their indices.
void print_top_k(const ref::Tensor& out, int64_t top_k);

}  // namespace zoc
