// Graph surgery for passes: redirect uses, drop nodes, restore topological order.
//
// Passes mark what they replace and let these helpers rebuild a consistent graph, so no pass
// re-implements value renumbering or ordering (and a fused node that now reads a value defined
// later in the old order, like a residual branch, is moved after it).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::ir {

// Every use of `from` (node inputs and graph outputs) now reads `to`.
void replace_uses(Graph& g, ValueId from, ValueId to);

// Number of node inputs reading `v`, plus one if it is a graph output.
int use_count(const Graph& g, ValueId v);

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
