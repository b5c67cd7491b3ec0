// Shape rules of the per-pixel and per-channel ops of issues 36 and 37 (see shapes.h): argmax,
// the binary ops with their broadcasting forms, clamp, PReLU, the normalizations and the channel
// reductions. Apart from shapes.cpp so that each file stays one screenful of rules per family.
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

}  // namespace zoc::ir::detail
