// Pass fold-batchnorm: conv followed by inference-mode BatchNorm becomes one conv.
//
// Math. BN computes, per output channel o,
//     y = (z - mean[o]) / sqrt(var[o] + eps) * gamma[o] + beta[o],  with z = conv(x, W) + b.
// Let s[o] = gamma[o] / sqrt(var[o] + eps). Then
//     y = conv(x, W * s[o]) + (b[o] - mean[o]) * s[o] + beta[o]
// so W'[o, ...] = W[o, ...] * s[o] and b'[o] = (b[o] - mean[o]) * s[o] + beta[o] (b = 0 if the
// conv has no bias). The IR records the fold (`bn_eps`, `bn_init` where the BN declares an
// init, and the BN layer's name in `fused_from`, from which shape inference lists the BN's
// tensors as the conv's parameters), and the arithmetic happens once, at load time, in double
// precision (runtime/zoc/weights/fold.h), so one weights file serves every precision and the file
// is never rewritten.
//
// Preconditions, checked: the conv's only user is the BN (a conv output used elsewhere too
// must stay unnormalized), the conv has no BN folded yet and nothing fused after it, and the
// conv is not a graph output. A BatchNorm that runs a second time on the weights of an earlier
// one (Node::weights_of) stays unfolded: a fold lists the BN's tensors under the name in
// `fused_from`, which is the layer's own.
#include <fmt/format.h>

#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool fold_batchnorm(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> remove(g.nodes.size(), false);
  ir::UseIndex uses(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& bn = g.nodes[i];
    if (bn.op != ir::OpKind::BatchNorm2d || !bn.weights_of.empty()) continue;
    const ir::ValueId conv_out = bn.inputs[0];
    ir::Node& conv = g.nodes[g.values[conv_out].producer];
    if (conv.op != ir::OpKind::FusedConv2d || conv.attrs.has("bn_eps") ||
        conv.attrs.i("activation") != 0 || conv.inputs.size() != 1 || uses.count(conv_out) != 1) {
      continue;
    }
    conv.attrs.set("bn_eps", ir::AttrValue{ir::AttrKind::Float, 0, {}, bn.attrs.f("eps")});
    // The BN's declared gamma init stays with its tensors (seeded weights of the folded graph).
    if (const ir::AttrValue* init = bn.attrs.find("init")) conv.attrs.set("bn_init", *init);
    conv.fused_from.push_back(bn.name);
    uses.replace(bn.output, conv_out);
    remove[i] = true;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: fold-batchnorm broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
