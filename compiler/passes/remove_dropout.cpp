// Pass remove-dropout: dropout is the identity at inference, so its users read its input.
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool remove_dropout(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> remove(g.nodes.size(), false);
  ir::UseIndex uses(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op != ir::OpKind::Dropout) continue;
    uses.replace(n.output, n.inputs[0]);
    remove[i] = true;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: remove-dropout broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
