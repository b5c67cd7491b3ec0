// Pass dce: removes nodes none of whose results reach a graph output (the graph's inputs, the
// input and a training graph's labels, always stay).
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"

namespace zoc::passes {

bool eliminate_dead_code(ir::Graph& g, Diagnostics& diags) {
  std::vector<bool> live(g.nodes.size(), false);
  std::vector<int32_t> stack;
  for (ir::ValueId v : g.outputs) stack.push_back(g.values[v].producer);
  while (!stack.empty()) {
    const int32_t i = stack.back();
    stack.pop_back();
    if (live[i]) continue;
    live[i] = true;
    for (ir::ValueId v : g.nodes[i].inputs) stack.push_back(g.values[v].producer);
  }
  std::vector<bool> remove(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::OpKind op = g.nodes[i].op;
    remove[i] = !live[i] && op != ir::OpKind::Input && op != ir::OpKind::Labels;
  }
  if (!ir::compact_and_sort(g, remove)) {
    diags.error(SourceLoc{g.name, 0, 0}, "internal error: dce broke the graph");
    return false;
  }
  return true;
}

}  // namespace zoc::passes
