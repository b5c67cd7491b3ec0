// Pass fuse-residual-add: add(conv(x), r) becomes conv(x) + r inside the conv's epilogue.
//
// cuDNN's conv-bias-activation computes act(conv(x) + bias + alpha2 * z); a residual block's
// add is that z. Preconditions, checked: the add has two operands of one type (not a constant
// or a broadcast one), and the conv operand has the add as its only user and no residual or
// activation yet. When both operands qualify (a block with a projection shortcut) the first one,
// the main branch, takes the add; the fused node moves after the residual's producer.
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {
namespace {

bool can_take_residual(const ir::Graph& g, const ir::UseIndex& uses, ir::ValueId v) {
  const ir::Node& n = g.producer(v);
  return n.op == ir::OpKind::FusedConv2d && n.inputs.size() == 1 && n.attrs.i("activation") == 0 &&
         uses.count(v) == 1;
}

}  // namespace

bool fuse_residual_add(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> remove(g.nodes.size(), false);
  ir::UseIndex uses(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    // cuDNN's z is a tensor of the output's shape: not a constant, nor a broadcast operand.
    if (add.op != ir::OpKind::Add || add.inputs.size() != 2 ||
        g.type(add.inputs[0]) != g.type(add.inputs[1])) {
      continue;
    }
    int conv_side = -1;
    if (can_take_residual(g, uses, add.inputs[0])) {
      conv_side = 0;
    } else if (can_take_residual(g, uses, add.inputs[1])) {
      conv_side = 1;
    }
    if (conv_side < 0) continue;
    const ir::ValueId conv_out = add.inputs[conv_side];
    const ir::ValueId residual = add.inputs[1 - conv_side];
    ir::Node& conv = g.nodes[g.values[conv_out].producer];
    conv.inputs.push_back(residual);
    conv.fused_from.push_back(add.name);
    const ir::ValueId add_out = add.output;
    uses.replace(add_out, conv_out);
    remove[i] = true;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: fuse-residual-add broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
