// Shape inference: gives every value its TensorType and every node its parameter list.
//
// Each op's rule lives here, next to the checks that make it well defined (groups divide the
// channels, windows fit the padded input, sizes do not overflow), so that a bad model fails
// here with a located message and never reaches a kernel with a nonsensical shape.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::ir {

// Largest extent of one dimension. cuDNN and the generated code index with 32-bit ints.
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
// Largest per-sample tensor, in bytes of the widest dtype (8), so byte sizes of a whole batch
// of up to 2^16 samples still fit in 64 bits.
inline constexpr int64_t kMaxSampleBytes = int64_t{1} << 40;
// Largest batch: that of the bound above, of zoc run --batch and of a batch a model file fixes.
inline constexpr int64_t kMaxBatch = int64_t{1} << 16;

// Infers types for all nodes in order. Reports every error found (a node whose inputs failed
// is skipped silently, so one mistake gives one message). Returns false on any error.
bool infer_shapes(Graph& graph, Diagnostics& diags);
// The same for nodes `first` onwards only, taking the types of the nodes before as they are: a
// frontend that infers shapes while it appends nodes calls this with the nodes added since its
// last call, so a model of n nodes costs O(n), not O(n^2) (issue 31: a 20,000-Conv ONNX chain
// took minutes re-inferring the whole graph per node).
bool infer_shapes_from(Graph& graph, size_t first, Diagnostics& diags);

// PyTorch's output-size rules, overflow-checked. nullopt when the result would be < 1.
std::optional<int64_t> conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                        int64_t dilation);
std::optional<int64_t> pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                        int64_t dilation, bool ceil_mode);

// How the frontends give `mul` two activations of per-sample shapes a and b: in this order
// (false), swapped (true: b is an image [C, H, W] and a its channel vector [C, 1, 1], which the
// IR takes second), or why they do not multiply (neither one shape nor an image and its channel
// vector), in the words of a frontend's refusal.
Expected<bool> mul_swaps_operands(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace zoc::ir
