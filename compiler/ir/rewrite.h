// Graph surgery for passes: redirect uses, drop nodes, restore topological order.
//
// Passes mark what they replace and let these helpers rebuild a consistent graph, so no pass
// re-implements value renumbering or ordering (and a fused node that now reads a value defined
// later in the old order, like a residual branch, is moved after it).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::ir {

// Number of node inputs reading `v`, plus one if it is a graph output. Scans the graph: for
// one-off questions; a pass that asks per node builds a UseIndex.
int use_count(const Graph& g, ValueId v);

// Where every value is read (node inputs and graph outputs), built once per pass and kept
// current as the pass redirects uses, so that a pass over n nodes costs O(n) rather than a scan
// of the graph per rewrite (issue 31: 33,000 residual blocks took a minute in the passes).
class UseIndex {
 public:
  explicit UseIndex(Graph& g);
  // Node inputs reading `v`, plus one if it is a graph output (as use_count).
  int count(ValueId v) const { return static_cast<int>(uses_[static_cast<size_t>(v)].size()); }
  // Every use of `from` (node inputs and graph outputs) now reads `to`.
  void replace(ValueId from, ValueId to);

 private:
  struct Use {
    int32_t node;  // kGraphOutput: graph output number `slot`
    int32_t slot;  // input number of the node
  };
  static constexpr int32_t kGraphOutput = -1;
  Graph& g_;
  std::vector<std::vector<Use>> uses_;  // per value
};

// Kahn's algorithm over nodes 0..n-1, where deps[i] lists the nodes node i reads. Ready nodes
// are taken lowest index first, so the order follows the given one wherever the dependencies
// allow. Nodes on or behind a cycle are missing from the result.
std::vector<int> stable_topological_order(const std::vector<std::vector<int>>& deps);

// Removes the nodes with remove[i] set (their outputs must be unused), renumbers values, and
// re-sorts nodes topologically, keeping the existing order wherever dependencies allow.
// Returns false (leaving the graph unchanged) if the remaining graph has a cycle.
bool compact_and_sort(Graph& g, const std::vector<bool>& remove);

// Puts the nodes in the given order (a permutation of 0..n-1 that reads every value after its
// producer; the caller guarantees it) and renumbers values to match. A lowering's storage names
// values by number, so it is dropped: reorder before lower-to-target, as its schedule does.
void apply_order(Graph& g, const std::vector<int>& order);

}  // namespace zoc::ir
