// Pass lower-conv: conv2d -> fused_conv2d with empty BN, residual and activation slots.
//
// The backends then have a single convolution op, whose epilogue the following passes fill in.
// Parameters keep their names (`<conv>.weight`, `<conv>.bias`) and roles.
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool lower_conv(ir::Graph& g, Diagnostics&) {
  for (ir::Node& n : g.nodes) {
    if (n.op != ir::OpKind::Conv2d) continue;
    n.op = ir::OpKind::FusedConv2d;
    n.attrs.set("activation", ir::AttrValue{ir::AttrKind::Int, 0, {}, 0});
    n.fused_from = {n.name};
  }
  return true;
}

}  // namespace zoc::passes
