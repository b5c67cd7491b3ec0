// Shape rules of the per-pixel and per-channel ops of issues 36 and 37 (see shapes.h): argmax,
// the binary ops with their broadcasting forms, clamp, PReLU, the normalizations and the channel
// reductions. Apart from shapes.cpp so that each file stays one screenful of rules per family.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/ir/shape_rule.h"
#include "compiler/ir/shapes.h"
#include "compiler/support/checked_math.h"

namespace zoc::ir::detail {

// Over dim 1: the channels of each pixel of an image, or the features of [N, F]. The result
// is i64, as PyTorch's; keepdim keeps dim 1 as a 1.
bool Rule::argmax() {
  const std::vector<int64_t>& d = in(0).dims;
  if (d.size() != 1 && d.size() != 3) {
    return fail(
        fmt::format("expects features [N, F] or an image [N, C, H, W], got {}", dims_str(d)));
  }
  std::vector<int64_t> out(d.begin() + 1, d.end());
  if (n_.attrs.b("keepdim")) out.insert(out.begin(), 1);
  return set_result(n_.output, TensorType{DType::I64, out.size() == 3 ? Layout::NCHW : Layout::NC,
                                          std::move(out)});
}

namespace {

// NumPy's broadcast of two per-sample shapes of one rank (both operands carry the batch in
// front, so ranks that differ would align the batch with a channel: refused), or nullopt.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return std::nullopt;
  std::vector<int64_t> out(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] != b[k] && a[k] != 1 && b[k] != 1) return std::nullopt;
    out[k] = std::max(a[k], b[k]);
  }
  return out;
}

}  // namespace

// add, sub, mul, div: two tensors broadcast, or one and a constant (`scalar`, or the node's
// operand_tensor: per channel of an image, stored [C], [C, 1, 1] or [1, C, 1, 1], per feature,
// [F] or [1, F], or one value, [] or, with `one_value`, param_rank dimensions of 1).
bool Rule::binary() {
  const Attrs& a = n_.attrs;
  const bool scalar = a.has("scalar"), tensor = !n_.operand_tensor.empty();
  if (n_.inputs.size() == 2) {
    if (scalar || tensor || a.has("reverse") || a.has("param_rank") || a.has("one_value")) {
      return fail(
          "two inputs take no constant operand (`scalar`, a tensor, `reverse`, "
          "`param_rank`, `one_value` are for one input)");
    }
    auto dims = broadcast(in(0).dims, in(1).dims);
    if (!dims) {
      return fail(
          fmt::format("operand shapes {} and {} do not broadcast (each dimension equal, "
                      "or 1 in one of them, in operands of one rank)",
                      dims_str(in(0).dims), dims_str(in(1).dims)));
    }
    return set_output(std::move(*dims), in(0).dims == *dims ? in(0).layout : in(1).layout);
  }
  if (scalar == tensor) {
    return fail(scalar ? "give the constant operand as `scalar` or as a tensor, not both"
                       : "one input needs a constant operand: `scalar`, or a tensor of the "
                         "weights file");
  }
  const std::vector<int64_t>& d = in(0).dims;
  if (scalar) {
    if (a.has("param_rank") || a.has("one_value")) {
      return fail("`param_rank` and `one_value` describe a tensor operand, not `scalar`");
    }
    return set_output(d, in(0).layout);
  }
  if (d.size() != 3 && d.size() != 1) {
    return fail(
        fmt::format("a tensor operand needs an image [N, C, H, W] or features [N, F], "
                    "got {}",
                    dims_str(d)));
  }
  const int64_t c = d[0];
  const int64_t rank = a.has("param_rank") ? a.i("param_rank") : (d.size() == 3 ? 3 : 1);
  std::vector<int64_t> shape;
  if (a.flag("one_value")) {
    if (rank > static_cast<int64_t>(d.size()) + 1) {  // PyTorch would broadcast to more dims
      return fail(fmt::format("a one-value operand of rank {} would broadcast {} to rank {}", rank,
                              dims_str(d), rank));
    }
    shape.assign(static_cast<size_t>(rank), 1);  // [1] (timm's scale), [1, 1, 1, 1], ...
  } else if (rank == 0) {
    shape = {};
  } else if (rank == 1) {
    shape = {c};  // timm's gamma [C], reshaped to [1, C, 1, 1] by the forward
  } else if (d.size() == 3 && (rank == 3 || rank == 4)) {
    shape = rank == 3 ? std::vector<int64_t>{c, 1, 1} : std::vector<int64_t>{1, c, 1, 1};
  } else if (d.size() == 1 && rank == 2) {
    shape = {1, c};
  } else {
    return fail(
        fmt::format("param_rank {} does not fit {}: a tensor operand is per channel of "
                    "an image, [C] (1), [C, 1, 1] (3) or [1, C, 1, 1] (4), or per "
                    "feature, [F] (1) or [1, F] (2), or one value [] (0)",
                    rank, dims_str(d)));
  }
  const bool trainable = n_.operand_role == OperandRole::kParameter;
  return named_param(n_.operand_tensor, std::move(shape), ParamRole::kOperand, trainable) &&
         set_output(d, in(0).layout);
}

}  // namespace zoc::ir::detail
