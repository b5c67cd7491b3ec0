// Pass fuse-activation: act(conv(...)) becomes the conv's epilogue activation.
//
// Every activation fuses into every convolution. How the backend applies it: a depthwise
// convolution's (zoc's own kernel) applies any; an ungrouped one through cuDNN's graph API applies
// ReLU, ReLU6/hardtanh, SiLU, sigmoid, tanh and GELU in its pointwise epilogue (one pass over
// memory instead of two); the legacy call fuses ReLU only, and any other activation it cannot
// apply (hardswish, hardsigmoid) runs as an in-place kernel right after the convolution, no slower
// than the separate node it was.
// Preconditions, checked: the conv's only user is the activation, and it has none yet.
#include "compiler/ir/activation_params.h"
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool fuse_activation(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> remove(g.nodes.size(), false);
  ir::UseIndex uses(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& act = g.nodes[i];
    const int code = ir::fused_activation_code(act.op);
    if (code == 0) continue;
    const ir::ValueId conv_out = act.inputs[0];
    ir::Node& conv = g.nodes[g.values[conv_out].producer];
    if (conv.op != ir::OpKind::FusedConv2d || conv.attrs.i("activation") != 0 ||
        uses.count(conv_out) != 1) {
      continue;
    }
    conv.attrs.set("activation", ir::AttrValue{ir::AttrKind::Int, code, {}, 0});
    // The activation's attributes (hardtanh's bounds, leaky ReLU's slope, ELU's alpha), as
    // given or defaulted, which fused_activation_params reads back from the convolution.
    for (const char* name : ir::activation_param_names(act.op)) {
      if (!name) continue;
      const double v = ir::activation_param(act, name);
      conv.attrs.set(name, ir::AttrValue{ir::AttrKind::Float, 0, {}, v});
    }
    conv.fused_from.push_back(act.name);
    uses.replace(act.output, conv_out);
    remove[i] = true;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: fuse-activation broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
