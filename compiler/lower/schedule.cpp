// Side-branch scheduling: see schedule.h.
#include "compiler/lower/schedule.h"

#include "compiler/ir/rewrite.h"

namespace zoc::lower {

ir::Graph schedule_side_branches(const ir::Graph& g, std::vector<SideBranch>* branches) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> readers(g.values.size());
  for (int i = 0; i < n; ++i) {
    for (ir::ValueId v : g.nodes[i].inputs) readers[v].push_back(i);
  }
  for (ir::ValueId v : g.outputs) readers[v].push_back(n);  // a graph output: read at the end
  // hoist_before[f]: side branches to emit just before node f; join_of[d]: D's join.
  std::vector<std::vector<int>> hoist_before(n);
  std::vector<int> join_of(n, -1);
  for (int d = 0; d < n; ++d) {
    const ir::Node& node = g.nodes[d];
    if (node.op != ir::OpKind::FusedConv2d || node.inputs.size() != 1) continue;
    const std::vector<int>& out_readers = readers[node.output];
    if (out_readers.size() != 1 || out_readers[0] >= n) continue;
    const ir::Node& join = g.nodes[out_readers[0]];
    if (join.op != ir::OpKind::FusedConv2d || join.inputs.size() != 2 ||
        join.inputs[1] != node.output || join.inputs[0] == node.output) {
      continue;
    }
    int fork = -1;                           // the first other reader of D's input, before D
    for (int r : readers[node.inputs[0]]) {  // (a reader that is itself a side branch moves)
      if (r != d && r < d && join_of[r] < 0 && (fork < 0 || r < fork)) fork = r;
    }
    if (fork < 0) continue;
    hoist_before[fork].push_back(d);
    join_of[d] = out_readers[0];
  }
  std::vector<int> order;
  order.reserve(n);
  for (int i = 0; i < n; ++i) {
    for (int d : hoist_before[i]) order.push_back(d);
    if (join_of[i] < 0) order.push_back(i);
  }
  ir::Graph out = g;
  ir::apply_order(out, order);
  std::vector<int> position(n);
  for (int k = 0; k < n; ++k) position[order[k]] = k;
  branches->clear();
  for (int k = 0; k < n; ++k) {
    if (join_of[order[k]] >= 0) branches->push_back({k, position[join_of[order[k]]]});
  }
  return out;
}

}  // namespace zoc::lower
