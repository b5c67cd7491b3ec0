// Pass fuse-activation: relu(conv(...)) becomes the conv's epilogue activation.
//
// Preconditions, checked: the conv's only user is the ReLU, and it has no activation yet.
// (tanh and sigmoid stay separate layers: cuDNN's fused conv epilogue supports only ReLU.)
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool fuse_activation(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> remove(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& relu = g.nodes[i];
    if (relu.op != ir::OpKind::Relu) continue;
    const ir::ValueId conv_out = relu.inputs[0];
    ir::Node& conv = g.nodes[g.values[conv_out].producer];
    if (conv.op != ir::OpKind::FusedConv2d || conv.attrs.i("activation") != 0 ||
        ir::use_count(g, conv_out) != 1) {
      continue;
    }
    conv.attrs.set("activation", ir::AttrValue{ir::AttrKind::Int, 1, {}, 0});
    conv.fused_from.push_back(relu.name);
    ir::replace_uses(g, relu.output, conv_out);
    remove[i] = true;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: fuse-activation broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
